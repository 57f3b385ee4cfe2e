// Owns the GEMV skeleton of the linear family (M <= 8 activation rows, one pass over the weights): the CTA's split
// into weight-row groups and K slices, the per-lane loop over K units, and the deterministic warp/CTA reduction.
//
// A CTA is kGemvWarps warps = (kGemvWarps / splits) row groups × `splits` K slices. Row group g owns weight rows
// [n0, n0 + R); its warps take K units (a 16-byte weight vector or an NVFP4 block) lane by lane, unit u going to
// slice (u / 32) % splits. Each lane accumulates acc[m][r] for all MT activation rows and R weight rows; the warp
// sums with a butterfly, the slices are summed in slice order in shared memory, and lane (m·R + r) of the group's
// first warp stores output (m, n0 + r). The order of additions depends only on the launch shape.
#pragma once

#include <cstdint>

#include "kernels/common/reduce.cuh"

namespace ninfer::kern {

constexpr int kGemvWarps = 8;
constexpr int kGemvThreads = kGemvWarps * 32;

// K units a lane takes per group for the NVFP4 GEMVs: 4 for the small register tiles of M <= 2, 2 above (registers:
// the resource report, scripts/cuda-resources.sh, fails on any spill). The dense GEMVs take 1: on the H200 the bf16
// M = 1 GEMV ran at 90% of copy bandwidth ungrouped and 77% with groups of 4, while the NVFP4 one gained 8%
// (docs/gpu.md, Results).
template <int MT, int R>
constexpr int kGemvUnroll = MT * R <= 4 ? 4 : 2;

// U: K units per group (kGemvUnroll). unit(n0, u, acc) adds unit u of rows [n0, n0 + R) (rows past N may be read
// clamped; their sums are dropped);
// store(m, n, v) writes output (m, n) for m < rows, n < N.
template <int MT, int R, int U, typename Unit, typename Store>
__device__ __forceinline__ void gemv_run(int64_t N, int64_t units, int splits, const Unit& unit, const Store& store) {
  static_assert(U >= 1, "gemv_run: units per group");
  static_assert(MT * R <= 32, "gemv_run: one lane per output of a row group");
  __shared__ float part[kGemvWarps][MT * R];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int groups = kGemvWarps / splits;
  const int g = warp / splits, s = warp % splits;
  const int64_t n0 = (static_cast<int64_t>(blockIdx.x) * groups + g) * R;
  float acc[MT][R];
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int r = 0; r < R; ++r) acc[m][r] = 0.0f;
  if (n0 < N) {
    // Groups of U units (a constant trip count both nvcc and clang unroll), so that the weight loads of a group are
    // issued together (read-only, independent): more bytes in flight per lane. The additions keep their order.
    const int64_t step = 32 * static_cast<int64_t>(splits);
    int64_t u = static_cast<int64_t>(s) * 32 + lane;
    for (; u + (U - 1) * step < units; u += U * step) {
#pragma unroll
      for (int i = 0; i < U; ++i) unit(n0, u + i * step, acc);
    }
#pragma unroll 1
    for (; u < units; u += step) unit(n0, u, acc);
  }
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int r = 0; r < R; ++r) acc[m][r] = warp_sum(acc[m][r]);
  if (splits == 1) {
    if (n0 >= N) return;
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int r = 0; r < R; ++r)
        if (lane == m * R + r) store(m, n0 + r, acc[m][r]);
    return;
  }
  if (lane == 0) {
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int r = 0; r < R; ++r) part[warp][m * R + r] = acc[m][r];
  }
  __syncthreads();
  if (s != 0 || n0 >= N || lane >= MT * R) return;
  float v = 0.0f;
  for (int i = 0; i < splits; ++i) v += part[g * splits + i][lane];
  store(lane / R, n0 + lane % R, v);
}

// The K slices per row group for a launch of `groups` row groups over `units` K units: the fewest that give the
// device at least two CTAs per multiprocessor, without slices of under two units per lane.
inline int gemv_splits(int64_t groups, int64_t units, int sm_count) {
  int splits = 1;
  auto ctas = [&](int sp) { return (groups + kGemvWarps / sp - 1) / (kGemvWarps / sp); };
  while (splits < kGemvWarps && ctas(splits) < 2 * static_cast<int64_t>(sm_count) && units >= 64 * 2 * splits)
    splits *= 2;
  return splits;
}
inline unsigned gemv_ctas(int64_t groups, int splits) {
  return static_cast<unsigned>((groups + kGemvWarps / splits - 1) / (kGemvWarps / splits));
}

// y[m, n] = v, or y[m, n] + v when accumulating.
__device__ __forceinline__ void gemv_put(float* y, int64_t ys, int m, int64_t n, float v, bool accumulate) {
  float* p = y + m * ys + n;
  *p = accumulate ? *p + v : v;
}

}  // namespace ninfer::kern
