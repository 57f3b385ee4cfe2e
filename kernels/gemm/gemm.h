// Owns the launchers of the linear family (kernels/gemm/): y[M, N] = x[M, K]·w[N, K]ᵀ (+ y) for dense f32/bf16/f16
// weights and packed NVFP4 weights (W4A4 with the activation quantizer, W4A16), and the layout of the quantized
// activation rows the W4A4 kernels read from the op's workspace.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/kview.h"

namespace ninfer::kern {

// The activation and output side of one linear call. x and y are f32 rows (row strides in elements); K is x's row
// length, N y's. accumulate adds to y instead of overwriting it.
struct LinearArgs {
  const float* x = nullptr;
  int64_t xs = 0;
  float* y = nullptr;
  int64_t ys = 0;
  int64_t M = 0, N = 0, K = 0;
  bool accumulate = false;
};

// Activation rows up to which linear runs the GEMV kernels (one pass over the weights); above, the tiled GEMM.
constexpr int64_t kGemvMaxRows = 8;

// Dense weights w [N, K] of type wtype (kF32/kBF16/kF16), row stride ws elements. f32 FMA accumulation.
// sm_count: the device's multiprocessors (sizes the GEMV's K split for small N).
void linear_dense(cudaStream_t stream, const LinearArgs& a, const void* w, KType wtype, int64_t ws, int sm_count);

// One NVFP4 entry on the device (engine/artifact/dtype.h nvfp4_layout()): codes [N, K/2], E4M3 scales [N, K/16],
// trailer[0] = weight_scale_2, trailer[1] = input_scale (0 = dynamic). The kernels read the trailer on the device.
struct Nvfp4WeightView {
  const uint8_t* codes = nullptr;
  const uint8_t* scales = nullptr;
  const float* trailer = nullptr;
  int64_t N = 0, K = 0;
};

// One quantized activation row (K a multiple of 16), every part 16-byte aligned at offsets from the row start:
// codes [K/2] and E4M3 scales [K/16] exactly as nvfp4_quantize_row writes them, then the same values expanded for
// the kernels: 2·e2m1 as int8 [K], e4m3(scale) as f32 [K/16], and the row's global scale g (f32).
struct Nvfp4ActLayout {
  int64_t codes = 0, scales = 0, i8 = 0, scale_f32 = 0, global = 0, row_bytes = 0;
};
NINFER_HD constexpr int64_t nvfp4_round16(int64_t v) { return (v + 15) / 16 * 16; }
NINFER_HD constexpr Nvfp4ActLayout nvfp4_act_layout(int64_t K) {
  Nvfp4ActLayout l;
  l.codes = 0;
  l.scales = K / 2;
  l.i8 = nvfp4_round16(K / 2 + K / 16);
  l.scale_f32 = l.i8 + K;
  l.global = nvfp4_round16(l.scale_f32 + 4 * (K / 16));
  l.row_bytes = l.global + 16;
  return l;
}
NINFER_HD constexpr size_t nvfp4_act_bytes(int64_t M, int64_t K) {
  return static_cast<size_t>(M * nvfp4_act_layout(K).row_bytes);
}

// Which W4A4 decode kernels run for M <= kGemvMaxRows (both give the CPU's result up to f32 summation order, and
// write the same quantized activation bytes):
//   kTiled: the GEMV of gemv.cuh (one 16-block per lane unit) after the quantizer with one CTA per row;
//   kStream: the streaming GEMV of nvfp4_gemv.cu (16-byte weight loads, 4 rows per warp, activations read once per
//   chunk; K % 32 == 0, else the tiled GEMV) after the quantizer with several CTAs per row (up to 32 rows).
// Above kGemvMaxRows both run the same GEMMs.
enum class W4a4Gemv : uint8_t { kTiled, kStream };
// What CudaBackend::linear runs: the tiled kernels until a GPU run has measured the streaming ones (docs/gpu.md).
constexpr W4a4Gemv kW4a4GemvDefault = W4a4Gemv::kTiled;

// W4A4 activation quantizer (bit-identical to nvfp4_quantize_row): rows m < M of x (row stride xs) into `act`
// (16-byte aligned, nvfp4_act_bytes(M, K)), with the input scale read from *input_scale on the device.
void nvfp4_quantize_act(cudaStream_t stream, const float* x, int64_t xs, int64_t M, int64_t K, const float* input_scale,
                        void* act, W4a4Gemv variant);
// W4A4: y = Σ_b I_b·(sa_b·sw_b) · ((g·weight_scale_2)·0.25) over activations quantized by nvfp4_quantize_act.
void linear_nvfp4_w4a4(cudaStream_t stream, const LinearArgs& a, const Nvfp4WeightView& w, const void* act,
                       int sm_count, W4a4Gemv variant);
// W4A16: y = Σ_k x_k·(e2m1(c)·(e4m3(s)·weight_scale_2)), f32 activations.
void linear_nvfp4_w4a16(cudaStream_t stream, const LinearArgs& a, const Nvfp4WeightView& w, int sm_count);

}  // namespace ninfer::kern
