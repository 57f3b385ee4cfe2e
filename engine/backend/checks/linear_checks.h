// Owns the linear op's argument rules (dense f32/bf16/f16 and packed nvfp4 weights), written once for every backend:
// each takes the device the tensors must live on.
#pragma once

#include <cstdint>

#include "engine/backend/backend.h"

namespace ninfer {

struct LinearDims {
  int64_t M, N, K;
};

// An nvfp4 weight [N, K] view of a whole entry on `device`: K % 16 == 0, contiguous rows, data. Does not read the
// trailer (on a device it is device memory; the CPU op checks it, a device backend when the weight is uploaded).
void check_nvfp4_weight_on(const char* op, const Tensor& w, Device device);

// linear(y, x, w): y [M, N] and x [M, K] f32 with equally spaced rows, w [N, K] f32/bf16/f16 (Error(kUnsupported)
// for another plain dtype) or nvfp4 (check_nvfp4_weight_on); y must not alias x unless the output is empty.
LinearDims check_linear(const Tensor& y, const Tensor& x, const Tensor& w, Device device);

}  // namespace ninfer
