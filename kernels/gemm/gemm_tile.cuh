// Owns the tiled SIMT GEMM of the linear family (M > 8 activation rows): 64 activation rows × 128 weight rows per
// CTA of 256 threads, K in tiles of 16 (one NVFP4 block) through shared memory, a 4 × 8 register tile per thread,
// f32 FMA accumulation. The weight tile loader has three modes: dense f32/bf16/f16, NVFP4 dequantized (W4A16), and
// NVFP4 integer codes (W4A4, with the per-block I_b·(sa·sw) step).
#pragma once

#include <cstdint>

#include "kernels/common/load.cuh"
#include "kernels/common/nvfp4.cuh"
#include "kernels/gemm/gemm.h"

namespace ninfer::kern {

enum class TileMode : int { kDense = 0, kW4A16 = 1, kW4A4 = 2 };

constexpr int kTileM = 64, kTileN = 128, kTileK = 16, kTileThreads = 256;

// Thread t computes rows ty·4 + i (ty = t / 16) and columns tx·4 + j, 64 + tx·4 + j (tx = t % 16).
// kW4A4: the tile of K is one block b; the products of the integer tiles (2·e2m1 values as f32, exact) summed over
// the block give I_b exactly, then acc = fma(I_b, sa_b·sw_b, acc) adds t_b with the reference's single rounding.
template <TileMode MODE, typename T>
__global__ void __launch_bounds__(kTileThreads)
    gemm_tile_kernel(LinearArgs a, const T* w, int64_t ws, Nvfp4WeightView nv, const uint8_t* act) {
  __shared__ __align__(16) float As[kTileK][kTileM + 4];
  __shared__ __align__(16) float Bs[kTileK][kTileN + 4];
  __shared__ float sa_s[kTileM];
  __shared__ float sw_s[kTileN];
  constexpr bool kA4 = MODE == TileMode::kW4A4;
  constexpr bool kNv = MODE != TileMode::kDense;
  const int t = static_cast<int>(threadIdx.x);
  const int tx = t % 16, ty = t / 16;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kTileM, n0 = static_cast<int64_t>(blockIdx.x) * kTileN;
  const int64_t M = a.M, N = a.N, K = a.K;
  const int64_t tiles = (K + kTileK - 1) / kTileK;
  const Nvfp4ActLayout L = nvfp4_act_layout(K);
  const float ws2 = kNv ? nv.trailer[0] : 1.0f;

  // Registers holding the next tile between its global load and its shared store.
  float ra[4];
  uint32_t ra4 = 0;
  float rsa = 0.0f;
  T rb[8];
  uint32_t rb4 = 0, rsw = 0;

  auto load = [&](int64_t kt) {
    const int64_t k0 = kt * kTileK;
    if constexpr (kA4) {
      const int64_t m = m0 + t / 4;
      const uint8_t* row = act + (m < M ? m : 0) * L.row_bytes;
      ra4 = m < M ? *reinterpret_cast<const uint32_t*>(row + L.i8 + k0 + (t % 4) * 4) : 0u;
      if (t < kTileM) {
        const int64_t ms = m0 + t;
        rsa = ms < M ? *reinterpret_cast<const float*>(act + ms * L.row_bytes + L.scale_f32 + 4 * kt) : 0.0f;
      }
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int e = t + kTileThreads * i;
        const int64_t m = m0 + e / 16, k = k0 + e % 16;
        ra[i] = (m < M && k < K) ? __ldg(a.x + m * a.xs + k) : 0.0f;
      }
    }
    if constexpr (kNv) {
      const int64_t n = n0 + t / 2;
      const bool in = n < N;
      rb4 = in ? *reinterpret_cast<const uint32_t*>(nv.codes + n * (K / 2) + kt * 8 + (t % 2) * 4) : 0u;
      rsw = in ? nv.scales[n * (K / 16) + kt] : 0u;
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int e = t + kTileThreads * i;
        const int64_t n = n0 + e / 16, k = k0 + e % 16;
        rb[i] = (n < N && k < K) ? w[n * ws + k] : T{};
      }
    }
  };
  auto store = [&]() {
    if constexpr (kA4) {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        As[(t % 4) * 4 + j][t / 4] = static_cast<float>(static_cast<int8_t>(static_cast<uint8_t>(ra4 >> (8 * j))));
      if (t < kTileM) sa_s[t] = rsa;
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int e = t + kTileThreads * i;
        As[e % 16][e / 16] = ra[i];
      }
    }
    if constexpr (kNv) {
      const int n = t / 2, h = t % 2;
      const float sw = e4m3_decode(rsw);
      const float bs = __fmul_rn(sw, ws2);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float e = e2m1_to_f32(rb4 >> (4 * j));
        // kW4A4: 2·e2m1 (exact); kW4A16: the dequantized weight e2m1 · (e4m3 · weight_scale_2).
        Bs[h * 8 + j][n] = kA4 ? __fmul_rn(e, 2.0f) : __fmul_rn(e, bs);
      }
      if (kA4 && h == 0) sw_s[n] = sw;
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int e = t + kTileThreads * i;
        Bs[e % 16][e / 16] = to_float(rb[i]);
      }
    }
  };

  float acc[4][8], p[4][8];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = p[i][j] = 0.0f;

  if (tiles > 0) {
    load(0);
    store();
  }
  __syncthreads();
  for (int64_t kt = 0; kt < tiles; ++kt) {
    if (kt + 1 < tiles) load(kt + 1);
#pragma unroll 4  // fully unrolled, clang (sm_70) hoists all 16 steps' loads and spills the kW4A4 tile
    for (int kk = 0; kk < kTileK; ++kk) {
      const float4 av = *reinterpret_cast<const float4*>(&As[kk][ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[kk][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[kk][64 + tx * 4]);
      const float av4[4] = {av.x, av.y, av.z, av.w};
      const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          if constexpr (kA4) p[i][j] = fmaf(av4[i], bv[j], p[i][j]);
          else acc[i][j] = fmaf(av4[i], bv[j], acc[i][j]);
        }
    }
    if constexpr (kA4) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float sa = sa_s[ty * 4 + i];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const float sw = sw_s[j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4];
          acc[i][j] = fmaf(p[i][j], __fmul_rn(sa, sw), acc[i][j]);
          p[i][j] = 0.0f;
        }
      }
    }
    __syncthreads();
    if (kt + 1 < tiles) {
      store();
      __syncthreads();
    }
  }

#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t m = m0 + ty * 4 + i;
    if (m >= M) continue;
    float scale = 1.0f;
    if constexpr (kA4) {
      const float g = *reinterpret_cast<const float*>(act + m * L.row_bytes + L.global);
      scale = __fmul_rn(__fmul_rn(g, ws2), 0.25f);
    }
    float* yr = a.y + m * a.ys;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int64_t n = n0 + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
      if (n >= N) continue;
      const float v = kA4 ? __fmul_rn(acc[i][j], scale) : acc[i][j];
      yr[n] = a.accumulate ? yr[n] + v : v;
    }
  }
}

inline dim3 gemm_tile_grid(const LinearArgs& a) {
  return dim3(static_cast<unsigned>((a.N + kTileN - 1) / kTileN), static_cast<unsigned>((a.M + kTileM - 1) / kTileM));
}

}  // namespace ninfer::kern
