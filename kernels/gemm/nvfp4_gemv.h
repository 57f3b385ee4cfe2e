// Owns the launchers of the streaming W4A4 decode kernels (kernels/gemm/nvfp4_gemv.cu, W4a4Gemv::kStream): the
// GEMV for M <= kGemvMaxRows with 16-byte weight loads and the activation quantizer with several CTAs per row, and
// the shapes the GEMV takes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/gemm/gemm.h"

namespace ninfer::kern {

// The streaming GEMV reads a weight row 32 codes (16 bytes) at a time, so its rows must be 16-byte aligned: K a
// multiple of 32. Other shapes run the tiled GEMV.
inline bool w4a4_stream_fits(int64_t M, int64_t K) { return M >= 1 && M <= kGemvMaxRows && K % 32 == 0; }

// W4A4 GEMV, M <= kGemvMaxRows, K % 32 == 0, over activations from either quantizer (the layout is the same).
void linear_nvfp4_w4a4_stream(cudaStream_t stream, const LinearArgs& a, const Nvfp4WeightView& w, const uint8_t* act,
                              int sm_count);

// The activation quantizer with one CTA per 256 code bytes of a row (every CTA of a row finds the row's max itself):
// the same bytes as nvfp4_quantize_act's one CTA per row, spread over the device.
void nvfp4_quantize_act_split(cudaStream_t stream, const float* x, int64_t xs, int64_t M, int64_t K,
                              const float* input_scale, uint8_t* act);

}  // namespace ninfer::kern
