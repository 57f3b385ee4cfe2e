// Owns what every Communicator implementation shares about a collective's tensor: the argument checks, its view as
// [rows, N] f32 rows at one stride, and packing those rows to and from contiguous host memory (through the backend
// for a device tensor).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/backend/backend.h"

namespace ninfer {

// Rows of a collective's tensor: a 1-D tensor is one row.
int64_t collective_rows(const Tensor& t);
// t as [rows, row_size] at its row stride (the layout every collective works on).
Tensor collective_view(const Tensor& t);
// True when the rows are contiguous (one row, or a row stride equal to the row size).
bool collective_packed(const Tensor& t);
// Refuses anything but f32 with uniform rows: "`op`: `arg` must be f32, got …" / "… needs uniform rows, got …".
void check_collective_arg(const char* op, const char* arg, const Tensor& t);
// out ← t's rows packed [rows, N] on the host (a device tensor is copied through `backend`, which is synchronized).
void pack_rows_to_host(std::vector<float>& out, const Tensor& t, Backend& backend);
// t's rows ← `in` packed [rows, N] (a device tensor is written through `backend`, asynchronously on its stream).
void unpack_rows_from_host(const Tensor& t, const float* in, Backend& backend);

}  // namespace ninfer
