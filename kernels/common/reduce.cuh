// Owns the warp and block reductions (sum, max) the kernels share, built on __shfl_xor_sync only (sm_70-safe: no
// __reduce_*_sync, no cooperative groups).
//
// Usage:
//   - `warp_sum(v)` / `warp_max(v)`: butterfly over the whole warp (all 32 lanes must call it, all active); every lane
//     gets the result. `warp_sum<W>(v)` / `warp_max<W>(v)` reduce within aligned groups of W lanes (W = 2..32, a power
//     of two), e.g. 8 lanes per row. Works for float, double, int (anything __shfl_xor_sync takes).
//   - `block_sum(v, scratch)` / `block_max(v, scratch)`: over the whole block, every thread gets the result.
//     Requirements: blockDim.x·y·z a multiple of 32, at most 1024 threads, every thread calls it (no early return
//     before it), `scratch` a __shared__ T[32] (kBlockScratch). It synchronizes before it writes scratch, so consecutive
//     calls can share one scratch without an extra __syncthreads().
//   The order of the additions is fixed by the lane/warp layout: the result is deterministic for a given launch shape.
#pragma once

namespace ninfer::kern {

constexpr int kWarpSize = 32;
constexpr int kBlockScratch = 32;  // elements of the __shared__ scratch block_sum/block_max need

template <int W = kWarpSize, typename T>
__device__ __forceinline__ T warp_sum(T v) {
  static_assert(W >= 1 && W <= kWarpSize && (W & (W - 1)) == 0, "warp_sum: W must be a power of two <= 32");
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <int W = kWarpSize, typename T>
__device__ __forceinline__ T warp_max(T v) {
  static_assert(W >= 1 && W <= kWarpSize && (W & (W - 1)) == 0, "warp_max: W must be a power of two <= 32");
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) {
    const T other = __shfl_xor_sync(0xffffffffu, v, o);
    v = other > v ? other : v;
  }
  return v;
}

namespace detail {
__device__ __forceinline__ int flat_thread() {
  return static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}
__device__ __forceinline__ int block_threads() { return static_cast<int>(blockDim.x * blockDim.y * blockDim.z); }
}  // namespace detail

template <typename T>
__device__ __forceinline__ T block_sum(T v, T* scratch) {
  const int t = detail::flat_thread();
  const int warps = detail::block_threads() / kWarpSize;
  v = warp_sum(v);
  __syncthreads();  // a previous call's readers are done with scratch
  if ((t & (kWarpSize - 1)) == 0) scratch[t / kWarpSize] = v;
  __syncthreads();
  T r = (t & (kWarpSize - 1)) < warps ? scratch[t & (kWarpSize - 1)] : T(0);
  r = warp_sum(r);
  return r;
}

template <typename T>
__device__ __forceinline__ T block_max(T v, T* scratch) {
  const int t = detail::flat_thread();
  const int warps = detail::block_threads() / kWarpSize;
  v = warp_max(v);
  __syncthreads();
  if ((t & (kWarpSize - 1)) == 0) scratch[t / kWarpSize] = v;
  __syncthreads();
  T r = scratch[(t & (kWarpSize - 1)) < warps ? (t & (kWarpSize - 1)) : 0];
  r = warp_max(r);
  return r;
}

}  // namespace ninfer::kern
