// Owns the test hook into the CUDA W4A4 activation quantizer, the kernel linear() runs before its nvfp4 W4A4 kernels
// (kernels/gemm/nvfp4.cu), so its bytes can be compared with nvfp4_quantize_row's.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/backend/backend.h"

namespace ninfer::cuda {

// Row m's codes at [m·K/2, (m+1)·K/2), E4M3 scales at [m·K/16, ...), global scale g at [m].
struct Nvfp4QuantizedRows {
  std::vector<uint8_t> codes, scales;
  std::vector<float> global;
};

// Quantizes the rows of x (f32 [M, K] on `backend`, a CUDA backend; K % 16 == 0) with `input_scale` (0 = dynamic)
// exactly as linear() does, and returns the result on the host (synchronizes).
Nvfp4QuantizedRows nvfp4_quantize_rows(Backend& backend, const Tensor& x, float input_scale);

}  // namespace ninfer::cuda
