// Owns the test and bench hooks into the CUDA W4A4 path: the activation quantizer, the kernel linear() runs before its
// nvfp4 W4A4 kernels (kernels/gemm/nvfp4.cu), so its bytes can be compared with nvfp4_quantize_row's; and linear() in
// W4A4 mode with a chosen set of decode kernels (kern::W4a4Gemv), so both can be checked and timed side by side.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/backend/backend.h"
#include "kernels/gemm/gemm.h"

namespace ninfer::cuda {

// Row m's codes at [m·K/2, (m+1)·K/2), E4M3 scales at [m·K/16, ...), global scale g at [m].
struct Nvfp4QuantizedRows {
  std::vector<uint8_t> codes, scales;
  std::vector<float> global;
};

// Quantizes the rows of x (f32 [M, K] on `backend`, a CUDA backend; K % 16 == 0) with `input_scale` (0 = dynamic)
// exactly as linear() does with the `quantizer` variant's kernel, and returns the result on the host (synchronizes).
Nvfp4QuantizedRows nvfp4_quantize_rows(Backend& backend, const Tensor& x, float input_scale, kern::W4a4Gemv quantizer);

// backend.linear(y, x, w, accumulate) for an nvfp4 w in W4A4 mode (whatever the backend's Nvfp4Activations), with the
// decode kernels of `gemv` instead of kern::kW4a4GemvDefault. Same argument checks as linear().
void linear_w4a4(Backend& backend, const Tensor& y, const Tensor& x, const Tensor& w, bool accumulate,
                 kern::W4a4Gemv gemv);

}  // namespace ninfer::cuda
