// Owns the launchers of the sampling family (kernels/sampling/*.cu): reductions over logit rows that let the host
// read a choice instead of a whole row. Arguments are already checked by the caller; every pointer is device memory
// and every launch is asynchronous on `stream`.
#pragma once

#include <cstdint>

#include "kernels/common/kview.h"

namespace ninfer::kern {

// ids[r] = the index of the maximum of row r of x (f32 [rows, n], 2-D Rows, n < 2^31): the first maximum (ties go to
// the lower index) and a NaN never one unless at index 0, as std::max_element over the row (the CPU op). One block
// per row.
void argmax_rows(cudaStream_t stream, const Rows& x, int32_t* ids);

// best[2r], best[2r + 1] = row r's maximum and its first index as an exact f32 (n ≤ 2^24), NaN never the maximum and
// (NaN, -1) for a row of NaN only; with nan_first a NaN at index 0 gives (NaN, 0) (argmax_rows's answer). One block
// per row, the same reduction as argmax_rows.
void max_rows(cudaStream_t stream, const Rows& x, float* best, bool nan_first);

// best[r, j] = (value, index as an exact f32), j < k ≤ 64: row r's k first entries of x (f32 [rows, n], n ≤ 2^24) in
// top_pair_before's order (engine/backend/top_pairs.h: larger first, equal by lower index, NaN after numbers);
// (NaN, -1) past n. One block per row. Backend::top_k_rows.
inline constexpr int kTopKRowsLimit = 64;  // == kTopKRowsMax; the kernel's per-thread list
void top_k_rows(cudaStream_t stream, const Rows& x, float* best, int k);

// x[r, c] = -inf wherever allowed[c] == 0, in place (x f32 [rows, n], allowed [n]).
void mask_columns(cudaStream_t stream, const Rows& x, const int8_t* allowed);

// For each of `count` edits (five 32-bit words each, engine/backend/logit_edit.h's LogitEdit: row, col, add, scale,
// sub): x[row, col] = apply_logit_edit(x[row, col], add, scale, sub), one thread per edit (the edits name distinct
// elements). Backend::edit_logits.
void edit_logits(cudaStream_t stream, const Rows& x, const int32_t* edits, int64_t count);

}  // namespace ninfer::kern
