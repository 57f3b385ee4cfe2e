// Owns the argument checks every backend's ops share (device, dtype, layout, shape, batch), so each rule is written once.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>

#include "engine/backend/tensor.h"

namespace ninfer {

// Each throws Error(kInvalidArgument) (kUnsupported for a dtype the op does not take) naming `op` and `arg`.

// t lives on `device`, has data when non-empty, and its last dimension is contiguous.
void check_on(const char* op, const char* arg, const Tensor& t, Device device);
// check_on + dtype f32.
void check_f32_on(const char* op, const char* arg, const Tensor& t, Device device);
// check_on + dtype f32/bf16/f16 + equally spaced rows (a weight; not nvfp4).
void check_weight_on(const char* op, const char* arg, const Tensor& t, Device device);
// A weight vector [n] (norm gains, gating parameters).
void check_vector_on(const char* op, const char* arg, const Tensor& w, int64_t n, Device device);
// Exact shape; a negative entry matches any size.
void check_dims(const char* op, const char* arg, const Tensor& t, std::initializer_list<int64_t> shape);
void check_same_shape(const char* op, const char* arg, const Tensor& t, const Tensor& ref);
// q_start [S+1] runs from 0 to `tokens` without decreasing.
void check_batch(const char* op, std::span<const int32_t> q_start, int64_t tokens);

}  // namespace ninfer
