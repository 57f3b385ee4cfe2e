// Owns the launchers of the elementwise family (kernels/elementwise/*.cu): row norms, pointwise binary ops, RoPE,
// and row gathers (embedding, gather_rows). Arguments are already checked by the caller; every pointer is device
// memory and every launch is asynchronous on `stream`.
#pragma once

#include <cstdint>

#include "kernels/common/kview.h"

namespace ninfer::kern {

enum class NormKind : uint8_t {
  kRms,       // y = x · rsqrt(mean(x²) + eps) · (w + w_offset)
  kGatedRms,  // y = w · (x · rsqrt(mean(x²) + eps)) · silu(z)
  kL2,        // y = x · (scale / sqrt(Σx² + eps))
  kAddRms,    // x ← x + z (written back), then y = kRms of the sum
};
struct NormArgs {
  Rows y, x, z;                 // f32, same rows and n; z for kGatedRms (gate) and kAddRms (delta); y may be x
                                // (in place) except for kAddRms, where y may be z instead
  const void* w = nullptr;      // [n] f32/bf16/f16, not for kL2
  KType w_type = KType::kF32;
  float eps = 0.0f, w_offset = 0.0f, scale = 1.0f;
};
// One warp per row for n <= 1024, one 256-thread block per row above; Σx² in double.
void row_norm(cudaStream_t stream, NormKind kind, const NormArgs& args);

enum class PointwiseKind : uint8_t {
  kAdd,         // y = a + b
  kSiluMul,     // y = silu(a) · b
  kSigmoidMul,  // y = a · sigmoid(b)
};
// y, a, b f32 with the same rows and n, each with its own (strided) row layout; y may be a or b.
void pointwise(cudaStream_t stream, PointwiseKind kind, const Rows& y, const Rows& a, const Rows& b);

// In-place neox RoPE on x [tokens, heads, head_dim] f32 (element strides stride_t, stride_h; last dim contiguous) over
// its first 2·half dims: inv_freq [half] f32 (device), positions [tokens] (device).
void rope(cudaStream_t stream, float* x, int64_t tokens, int64_t heads, int64_t stride_t, int64_t stride_h,
          const int32_t* positions, const float* inv_freq, int64_t half);

// y[r, :] = f32(src[index[r], :]) for r < y.rows. y f32 [R, n] and src [*, n] f32/bf16/f16 are 2-D Rows (one leading
// dim); every index is already checked to be a row of src.
void gather_rows(cudaStream_t stream, const Rows& y, const Rows& src, const int32_t* index);

}  // namespace ninfer::kern
