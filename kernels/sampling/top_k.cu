// Row top-k (a sampled step's candidates): each row's k best (value, index) pairs in one total order, so the answer
// does not depend on how the row is split between threads (or ranks) and merged back.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/reduce.cuh"
#include "kernels/sampling/sampling.h"

namespace ninfer::kern {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxK = kTopKRowsLimit;  // the caller checks k against it

struct Pair {
  float v;
  int32_t i;  // −1: an empty slot
};

// top_pair_before (engine/backend/top_pairs.h), with empty slots after every entry: a number before NaN, the larger
// number first, equal values (−0 == +0) and two NaN by the lower index.
__device__ __forceinline__ bool before(Pair a, Pair b) {
  if (a.i < 0 || b.i < 0) return a.i >= 0 && b.i < 0;
  const bool na = a.v != a.v, nb = b.v != b.v;
  if (na != nb) return nb;
  if (!na && a.v != b.v) return a.v > b.v;
  return a.i < b.i;
}

__device__ __forceinline__ Pair warp_first(Pair c) {
#pragma unroll
  for (int o = kWarpSize / 2; o > 0; o >>= 1) {
    Pair other;
    other.v = __shfl_xor_sync(0xffffffffu, c.v, o);
    other.i = __shfl_xor_sync(0xffffffffu, c.i, o);
    if (before(other, c)) c = other;
  }
  return c;
}

// grid (rows), block kThreads. Thread t keeps the k first of elements t, t + kThreads, … (coalesced) in a sorted list;
// then k rounds each take the block's first list head (a block reduction) and advance its owner's list. Indices are
// unique, so exactly one thread owns each winner.
__global__ void __launch_bounds__(kThreads) top_k_kernel(Rows x, float* best, int k) {
  const float* row = static_cast<const float*>(x.data) + x.row_offset(blockIdx.x);
  Pair list[kMaxK];  // local memory; `last` keeps its k-th entry in registers for the test most elements fail
  Pair last{0.0f, -1};
  int held = 0;
  for (int64_t c = threadIdx.x; c < x.n; c += kThreads) {
    const Pair p{row[c], static_cast<int32_t>(c)};
    if (held == k && !before(p, last)) continue;
    int at = held == k ? k - 1 : held++;
    while (at > 0 && before(p, list[at - 1])) {
      list[at] = list[at - 1];
      --at;
    }
    list[at] = p;
    if (held == k) last = list[k - 1];
  }
  __shared__ Pair warp_winner[kThreads / kWarpSize];
  __shared__ Pair winner;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  float* out = best + 2 * static_cast<int64_t>(k) * blockIdx.x;
  int head = 0;
  for (int j = 0; j < k; ++j) {
    Pair c = head < held ? list[head] : Pair{0.0f, -1};
    c = warp_first(c);
    if (lane == 0) warp_winner[warp] = c;
    __syncthreads();
    if (warp == 0) {
      c = lane < kThreads / kWarpSize ? warp_winner[lane] : Pair{0.0f, -1};
      c = warp_first(c);
      if (lane == 0) winner = c;
    }
    __syncthreads();
    const Pair w = winner;
    if (w.i >= 0 && head < held && list[head].i == w.i) ++head;
    if (threadIdx.x == 0) {
      out[2 * j] = w.i >= 0 ? w.v : __int_as_float(0x7fc00000);
      out[2 * j + 1] = static_cast<float>(w.i);
    }
    __syncthreads();  // warp_winner and winner are rewritten by the next round
  }
}

}  // namespace

void top_k_rows(cudaStream_t stream, const Rows& x, float* best, int k) {
  if (x.rows == 0) return;
  top_k_kernel<<<static_cast<unsigned>(x.rows), kThreads, 0, stream>>>(x, best, k);
}

}  // namespace ninfer::kern
