// Neox rotate-half RoPE in place on [tokens, heads, head_dim] f32, rounded exactly as the CPU op: the angle is the
// f32 product position · inv_freq (inv_freq computed on the host), cos/sin of it in double rounded to f32, and the
// rotation in f32 without FMA contraction.
#include <cuda_runtime.h>

#include "kernels/elementwise/elementwise.h"

namespace ninfer::kern {
namespace {

constexpr int kChunk = 128;  // frequencies per block (grid.y over chunks)
constexpr int kLanes = 32;   // blockDim.x: along the frequencies
constexpr int kHeadsPerPass = 8;  // blockDim.y: heads rotated at once

// grid (tokens, ceil(half / kChunk)), block (kLanes, kHeadsPerPass).
__global__ void __launch_bounds__(kLanes * kHeadsPerPass)
    rope_kernel(float* x, int64_t heads, int64_t stride_t, int64_t stride_h, const int32_t* positions,
                const float* inv_freq, int64_t half) {
  __shared__ float cos_s[kChunk], sin_s[kChunk];
  const int64_t t = blockIdx.x;
  const int64_t i0 = static_cast<int64_t>(blockIdx.y) * kChunk;
  const int count = static_cast<int>(half - i0 < kChunk ? half - i0 : kChunk);
  const float pos = static_cast<float>(positions[t]);
  const int tid = static_cast<int>(threadIdx.y * kLanes + threadIdx.x);
  for (int i = tid; i < count; i += kLanes * kHeadsPerPass) {
    const float ang = __fmul_rn(pos, inv_freq[i0 + i]);
    double s, c;
    sincos(static_cast<double>(ang), &s, &c);
    cos_s[i] = static_cast<float>(c);
    sin_s[i] = static_cast<float>(s);
  }
  __syncthreads();
  float* xt = x + t * stride_t + i0;
  for (int64_t h = threadIdx.y; h < heads; h += kHeadsPerPass) {
    float* v = xt + h * stride_h;
    for (int i = threadIdx.x; i < count; i += kLanes) {
      const float a = v[i], b = v[i + half];
      const float c = cos_s[i], s = sin_s[i];
      v[i] = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
      v[i + half] = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
    }
  }
}

}  // namespace

void rope(cudaStream_t stream, float* x, int64_t tokens, int64_t heads, int64_t stride_t, int64_t stride_h,
          const int32_t* positions, const float* inv_freq, int64_t half) {
  if (tokens == 0 || heads == 0 || half == 0) return;
  const dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>((half + kChunk - 1) / kChunk));
  rope_kernel<<<grid, dim3(kLanes, kHeadsPerPass), 0, stream>>>(x, heads, stride_t, stride_h, positions, inv_freq,
                                                                half);
}

}  // namespace ninfer::kern
