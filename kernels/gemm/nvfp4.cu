// linear with packed NVFP4 weights: the W4A4 activation quantizer (bit-identical to nvfp4_quantize_row), the W4A4
// GEMV (dp4a on 2·e2m1 bytes, exact per-block integers) and the W4A16 GEMV (dequantized weights, f32 FMA) for
// M <= 8, the tiled SIMT GEMM in both modes above, and from kMmaMinRows the W4A4 tensor-core GEMM (nvfp4_mma.cu).
// W4a4Gemv::kStream sends the decode rows to the streaming kernels of nvfp4_gemv.cu instead.
#include "kernels/common/load.cuh"
#include "kernels/common/nvfp4.cuh"
#include "kernels/common/reduce.cuh"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_tile.cuh"
#include "kernels/gemm/gemv.cuh"
#include "kernels/gemm/nvfp4_gemv.h"
#include "kernels/gemm/nvfp4_mma.h"
#include "kernels/gemm/nvfp4_quant.cuh"

namespace ninfer::kern {

namespace {

// Threads per row: 1024 for a few rows (decode: one CTA per row is all the device runs, so the row's serial work is
// the latency of every W4A4 linear), 256 when there are rows enough to fill the device. The result does not depend
// on it: the row's max and finiteness are order-free, every code byte is computed on its own.
constexpr int kQuantThreadsFew = 1024, kQuantThreadsMany = 256;
constexpr int64_t kQuantFewRows = 32;

// One CTA per row. Pass 1: max|x| and finiteness over the row. Pass 2: thread t owns code byte j (elements 2j,
// 2j + 1); the 8 threads of a 16-block are 8 aligned lanes, which share the block's max|x| by shuffles.
template <int THREADS>
__global__ void __launch_bounds__(THREADS)
    nvfp4_quantize_kernel(const float* __restrict__ x, int64_t xs, int64_t K, const float* input_scale, uint8_t* act) {
  __shared__ float scratch[kBlockScratch];
  const int t = static_cast<int>(threadIdx.x);
  const int64_t m = blockIdx.x;
  const float* row = x + m * xs;
  const Nvfp4ActLayout L = nvfp4_act_layout(K);
  uint8_t* out = act + m * L.row_bytes;

  float amax = 0.0f, bad = 0.0f;
  for (int64_t k = t; k < K; k += THREADS) {
    const float v = row[k];
    if (!isfinite(v)) bad = 1.0f;
    amax = fmaxf(amax, fabsf(v));
  }
  amax = block_max(amax, scratch);
  bad = block_max(bad, scratch);
  const Nvfp4RowScale rs = nvfp4_row_scale(amax, bad != 0.0f, *input_scale);

  const int64_t bytes = K / 2;
  for (int64_t j0 = 0; j0 < bytes; j0 += THREADS) {  // uniform trip count: every lane reaches the shuffles
    const int64_t j = j0 + t;
    const bool active = j < bytes;
    const float x0 = active ? row[2 * j] : 0.0f, x1 = active ? row[2 * j + 1] : 0.0f;
    const float block_amax = warp_max<8>(fmaxf(fabsf(x0), fabsf(x1)));
    if (active) nvfp4_quantize_byte(x0, x1, block_amax, rs, L, out, j);
  }
  if (t == 0) *reinterpret_cast<float*>(out + L.global) = rs.g;
}

template <int MT>
constexpr int kNvfp4Rows = MT <= 2 ? 2 : 4;

// W4A4 GEMV: one K unit = one block b of 16 codes (8 bytes per weight row, 16 int8 per activation row).
template <int MT>
__global__ void __launch_bounds__(kGemvThreads, 1)
    w4a4_gemv_kernel(LinearArgs a, Nvfp4WeightView w, const uint8_t* __restrict__ act, int splits) {
  constexpr int R = kNvfp4Rows<MT>;
  const int rows = static_cast<int>(a.M);
  const int64_t N = a.N, K = a.K;
  const Nvfp4ActLayout L = nvfp4_act_layout(K);
  auto unit = [&](int64_t n0, int64_t b, float (&acc)[MT][R]) {
    int wq[R][4];
    float sw[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int64_t n = n0 + r < N ? n0 + r : N - 1;
      const uint2 c = __ldg(reinterpret_cast<const uint2*>(w.codes + n * (K / 2)) + b);
      e2m1x8_to_i8x2(c.x, wq[r][0], wq[r][1]);
      e2m1x8_to_i8x2(c.y, wq[r][2], wq[r][3]);
      sw[r] = e4m3_decode(__ldg(w.scales + n * (K / 16) + b));
    }
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      if (m >= rows) break;
      const uint8_t* ar = act + m * L.row_bytes;
      const int4 q = __ldg(reinterpret_cast<const int4*>(ar + L.i8) + b);
      const float sa = __ldg(reinterpret_cast<const float*>(ar + L.scale_f32) + b);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        int dot = __dp4a(wq[r][0], q.x, 0);
        dot = __dp4a(wq[r][1], q.y, dot);
        dot = __dp4a(wq[r][2], q.z, dot);
        dot = __dp4a(wq[r][3], q.w, dot);
        // t_b = I_b · (sa · sw) is exact in f32, so the fma rounds once, as acc += t_b does.
        acc[m][r] = fmaf(static_cast<float>(dot), __fmul_rn(sa, sw[r]), acc[m][r]);
      }
    }
  };
  const float ws2 = w.trailer[0];
  auto store = [&](int m, int64_t n, float v) {
    if (m >= rows || n >= N) return;
    const float g = *reinterpret_cast<const float*>(act + m * L.row_bytes + L.global);
    gemv_put(a.y, a.ys, m, n, __fmul_rn(v, __fmul_rn(__fmul_rn(g, ws2), 0.25f)), a.accumulate);
  };
  gemv_run<MT, R, kGemvUnroll<MT, R>>(N, K / 16, splits, unit, store);
}

// W4A16 GEMV: one K unit = one block b; the weights dequantized as dequantize_nvfp4 does, x read as float4 when its
// rows are 16-byte aligned (XVEC).
template <int MT, bool XVEC>
__global__ void __launch_bounds__(kGemvThreads, 1)
    w4a16_gemv_kernel(LinearArgs a, Nvfp4WeightView w, int splits) {
  constexpr int R = 2;
  const int rows = static_cast<int>(a.M);
  const int64_t N = a.N, K = a.K;
  const float ws2 = w.trailer[0];
  const float* __restrict__ x = a.x;
  auto unit = [&](int64_t n0, int64_t b, float (&acc)[MT][R]) {
    float wv[R][16];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int64_t n = n0 + r < N ? n0 + r : N - 1;
      const uint2 c = __ldg(reinterpret_cast<const uint2*>(w.codes + n * (K / 2)) + b);
      const float bs = __fmul_rn(e4m3_decode(__ldg(w.scales + n * (K / 16) + b)), ws2);
#pragma unroll
      for (int e = 0; e < 16; ++e) wv[r][e] = __fmul_rn(e2m1_to_f32((e < 8 ? c.x : c.y) >> (4 * (e % 8))), bs);
    }
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      if (m >= rows) break;
      const float* xr = x + m * a.xs + b * 16;
#pragma unroll
      for (int c = 0; c < 4; ++c) {  // four x values at a time keep the register tile small
        float xv[4];
        if constexpr (XVEC) {
          const float4 q = __ldg(reinterpret_cast<const float4*>(xr) + c);
          xv[0] = q.x;
          xv[1] = q.y;
          xv[2] = q.z;
          xv[3] = q.w;
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e) xv[e] = __ldg(xr + 4 * c + e);
        }
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[m][r] = fmaf(xv[e], wv[r][4 * c + e], acc[m][r]);
      }
    }
  };
  auto store = [&](int m, int64_t n, float v) {
    if (m < rows && n < N) gemv_put(a.y, a.ys, m, n, v, a.accumulate);
  };
  gemv_run<MT, R, kGemvUnroll<MT, R>>(N, K / 16, splits, unit, store);
}

template <int MT>
void launch_w4a4(cudaStream_t stream, const LinearArgs& a, const Nvfp4WeightView& w, const uint8_t* act,
                 int sm_count) {
  const int64_t groups = (a.N + kNvfp4Rows<MT> - 1) / kNvfp4Rows<MT>;
  const int splits = gemv_splits(groups, a.K / 16, sm_count);
  w4a4_gemv_kernel<MT><<<gemv_ctas(groups, splits), kGemvThreads, 0, stream>>>(a, w, act, splits);
}

template <int MT>
void launch_w4a16(cudaStream_t stream, const LinearArgs& a, const Nvfp4WeightView& w, int sm_count) {
  const int64_t groups = (a.N + 1) / 2;
  const int splits = gemv_splits(groups, a.K / 16, sm_count);
  const bool xvec = reinterpret_cast<uintptr_t>(a.x) % 16 == 0 && (a.M == 1 || a.xs % 4 == 0);
  if (xvec) w4a16_gemv_kernel<MT, true><<<gemv_ctas(groups, splits), kGemvThreads, 0, stream>>>(a, w, splits);
  else w4a16_gemv_kernel<MT, false><<<gemv_ctas(groups, splits), kGemvThreads, 0, stream>>>(a, w, splits);
}

}  // namespace

void nvfp4_quantize_act(cudaStream_t stream, const float* x, int64_t xs, int64_t M, int64_t K, const float* input_scale,
                        void* act, W4a4Gemv variant) {
  if (M <= 0) return;
  auto* out = static_cast<uint8_t*>(act);
  if (variant == W4a4Gemv::kStream && M <= kQuantFewRows) {
    nvfp4_quantize_act_split(stream, x, xs, M, K, input_scale, out);
    return;
  }
  if (M <= kQuantFewRows)
    nvfp4_quantize_kernel<kQuantThreadsFew><<<static_cast<unsigned>(M), kQuantThreadsFew, 0, stream>>>(x, xs, K,
                                                                                                    input_scale, out);
  else
    nvfp4_quantize_kernel<kQuantThreadsMany><<<static_cast<unsigned>(M), kQuantThreadsMany, 0, stream>>>(x, xs, K,
                                                                                                      input_scale, out);
}

void linear_nvfp4_w4a4(cudaStream_t stream, const LinearArgs& a, const Nvfp4WeightView& w, const void* act,
                       int sm_count, W4a4Gemv variant) {
  if (a.M <= 0 || a.N <= 0) return;
  const auto* q = static_cast<const uint8_t*>(act);
  if (variant == W4a4Gemv::kStream && w4a4_stream_fits(a.M, a.K)) {
    linear_nvfp4_w4a4_stream(stream, a, w, q, sm_count);  // nvfp4_gemv.cu
  } else if (a.M >= kMmaMinRows) {
    linear_nvfp4_w4a4_mma(stream, a, w, q);  // tensor cores: nvfp4_mma.cu
  } else if (a.M > kGemvMaxRows) {
    gemm_tile_kernel<TileMode::kW4A4, float><<<gemm_tile_grid(a), kTileThreads, 0, stream>>>(a, nullptr, 0, w, q);
  } else if (a.M == 1) {
    launch_w4a4<1>(stream, a, w, q, sm_count);
  } else if (a.M == 2) {
    launch_w4a4<2>(stream, a, w, q, sm_count);
  } else if (a.M <= 4) {
    launch_w4a4<4>(stream, a, w, q, sm_count);
  } else {
    launch_w4a4<8>(stream, a, w, q, sm_count);
  }
}

void linear_nvfp4_w4a16(cudaStream_t stream, const LinearArgs& a, const Nvfp4WeightView& w, int sm_count) {
  if (a.M <= 0 || a.N <= 0) return;
  if (a.M > kGemvMaxRows) {
    gemm_tile_kernel<TileMode::kW4A16, float><<<gemm_tile_grid(a), kTileThreads, 0, stream>>>(a, nullptr, 0, w,
                                                                                              nullptr);
  } else if (a.M == 1) {
    launch_w4a16<1>(stream, a, w, sm_count);
  } else if (a.M == 2) {
    launch_w4a16<2>(stream, a, w, sm_count);
  } else if (a.M <= 4) {
    launch_w4a16<4>(stream, a, w, sm_count);
  } else {
    launch_w4a16<8>(stream, a, w, sm_count);
  }
}

}  // namespace ninfer::kern
