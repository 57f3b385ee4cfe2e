// Owns the launcher of the W4A4 tensor-core GEMM (kernels/gemm/nvfp4_mma.cu) and the row count from which the linear
// family uses it instead of the SIMT tile kernel.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/gemm/gemm.h"

namespace ninfer::kern {

// Activation rows from which linear_nvfp4_w4a4 runs the tensor-core GEMM (below: the GEMV up to kGemvMaxRows, then
// the SIMT tile kernel, whose per-block sums are exact integers).
constexpr int64_t kMmaMinRows = 32;

// W4A4 y = Σ_k (2·e2m1_a·sa)·(2·e2m1_w·sw) · ((g·weight_scale_2)·0.25) (+ y) on wmma fp16 tiles with f32 accumulation,
// over activations quantized by nvfp4_quantize_act. Any M, N; K a multiple of 16.
void linear_nvfp4_w4a4_mma(cudaStream_t stream, const LinearArgs& a, const Nvfp4WeightView& w, const uint8_t* act);

}  // namespace ninfer::kern
