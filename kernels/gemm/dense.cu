// linear with dense f32/bf16/f16 weights: the GEMV (M <= 8; 16-byte weight vectors per lane when the rows allow)
// and the tiled SIMT GEMM (M > 8), both f32 FMA over f32 activations and exactly widened weights.
#include <algorithm>

#include "kernels/common/load.cuh"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_tile.cuh"
#include "kernels/gemm/gemv.cuh"

namespace ninfer::kern {

namespace {

// Weight rows per warp for MT activation rows: enough reuse of each x load, few enough registers.
template <int MT>
constexpr int kDenseRows = MT <= 2 ? 2 : 4;

// One K unit = EV consecutive elements (one 16-byte weight vector per row when WVEC, else one element); XVEC reads
// the matching x elements as float4 (x rows 16-byte aligned).
template <typename T, int MT, bool WVEC, bool XVEC>
__global__ void __launch_bounds__(kGemvThreads, 1)
    dense_gemv_kernel(LinearArgs a, const T* __restrict__ w, int64_t ws, int splits) {
  constexpr int R = kDenseRows<MT>;
  constexpr int EV = WVEC ? 16 / static_cast<int>(sizeof(T)) : 1;
  const int rows = static_cast<int>(a.M);
  const int64_t N = a.N, K = a.K;
  const float* __restrict__ x = a.x;
  auto unit = [&](int64_t n0, int64_t u, float (&acc)[MT][R]) {
    const int64_t k = u * EV;
    if (EV == 1 || k + EV <= K) {
      float wv[R][EV];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t n = n0 + r < N ? n0 + r : N - 1;
        if constexpr (EV > 1) {
          load_vec<EV>(w + n * ws + k, wv[r]);
        } else {
          wv[r][0] = to_float(w[n * ws + k]);
        }
      }
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        if (m >= rows) break;
        float xv[EV];
        const float* xr = x + m * a.xs + k;
        if constexpr (XVEC && EV >= 4) {
#pragma unroll
          for (int c = 0; c < EV / 4; ++c) {
            const float4 q = __ldg(reinterpret_cast<const float4*>(xr) + c);
            xv[4 * c] = q.x;
            xv[4 * c + 1] = q.y;
            xv[4 * c + 2] = q.z;
            xv[4 * c + 3] = q.w;
          }
        } else {
#pragma unroll
          for (int e = 0; e < EV; ++e) xv[e] = __ldg(xr + e);
        }
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int e = 0; e < EV; ++e) acc[m][r] = fmaf(xv[e], wv[r][e], acc[m][r]);
      }
    } else {  // the partial last vector of a row
      for (int64_t kk = k; kk < K; ++kk) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const int64_t n = n0 + r < N ? n0 + r : N - 1;
          const float wv = to_float(w[n * ws + kk]);
#pragma unroll
          for (int m = 0; m < MT; ++m)
            if (m < rows) acc[m][r] = fmaf(__ldg(x + m * a.xs + kk), wv, acc[m][r]);
        }
      }
    }
  };
  auto store = [&](int m, int64_t n, float v) {
    if (m < rows && n < N) gemv_put(a.y, a.ys, m, n, v, a.accumulate);
  };
  gemv_run<MT, R, 1>(N, (K + EV - 1) / EV, splits, unit, store);
}

template <typename T, int MT>
void launch_gemv(cudaStream_t stream, const LinearArgs& a, const T* w, int64_t ws, int sm_count) {
  constexpr int R = kDenseRows<MT>;
  constexpr int EV = 16 / static_cast<int>(sizeof(T));
  const bool wvec = reinterpret_cast<uintptr_t>(w) % 16 == 0 && (ws * static_cast<int64_t>(sizeof(T))) % 16 == 0 &&
                    a.K >= EV;
  const bool xvec = reinterpret_cast<uintptr_t>(a.x) % 16 == 0 && (a.M == 1 || a.xs % 4 == 0);
  const int64_t units = wvec ? (a.K + EV - 1) / EV : a.K;
  const int64_t groups = (a.N + R - 1) / R;
  const int splits = gemv_splits(groups, units, sm_count);
  const unsigned ctas = gemv_ctas(groups, splits);
  if (!wvec) dense_gemv_kernel<T, MT, false, false><<<ctas, kGemvThreads, 0, stream>>>(a, w, ws, splits);
  else if (xvec) dense_gemv_kernel<T, MT, true, true><<<ctas, kGemvThreads, 0, stream>>>(a, w, ws, splits);
  else dense_gemv_kernel<T, MT, true, false><<<ctas, kGemvThreads, 0, stream>>>(a, w, ws, splits);
}

template <typename T>
void launch_dense(cudaStream_t stream, const LinearArgs& a, const T* w, int64_t ws, int sm_count) {
  if (a.M > kGemvMaxRows) {
    gemm_tile_kernel<TileMode::kDense, T><<<gemm_tile_grid(a), kTileThreads, 0, stream>>>(a, w, ws, Nvfp4WeightView{},
                                                                                          nullptr);
  } else if (a.M == 1) {
    launch_gemv<T, 1>(stream, a, w, ws, sm_count);
  } else if (a.M == 2) {
    launch_gemv<T, 2>(stream, a, w, ws, sm_count);
  } else if (a.M <= 4) {
    launch_gemv<T, 4>(stream, a, w, ws, sm_count);
  } else {
    launch_gemv<T, 8>(stream, a, w, ws, sm_count);
  }
}

}  // namespace

void linear_dense(cudaStream_t stream, const LinearArgs& a, const void* w, KType wtype, int64_t ws, int sm_count) {
  if (a.M <= 0 || a.N <= 0) return;
  visit_float_type(wtype, [&](auto tag) {
    using T = decltype(tag);
    launch_dense<T>(stream, a, static_cast<const T*>(w), ws, sm_count);
  });
}

}  // namespace ninfer::kern
