// Row argmax (greedy choice over logit rows) with std::max_element's answer: the first maximum, NaN skipped unless it
// is the row's first element; and max_rows, the same reduction handing back the (maximum, index) pair on the device.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/reduce.cuh"
#include "kernels/sampling/sampling.h"

namespace ninfer::kern {
namespace {

constexpr int kThreads = 1024;
constexpr int32_t kNone = INT32_MAX;  // a candidate slot that saw only NaN (or nothing)

struct Best {
  float v;
  int32_t i;
};

// The better of two candidates: a real one over kNone, the larger value, on equal values the lower index. NaN values
// never enter a candidate, so this order is total and the reduction's shape does not change the answer.
__device__ __forceinline__ Best better(Best a, Best b) {
  if (b.i == kNone) return a;
  if (a.i == kNone) return b;
  if (b.v > a.v || (b.v == a.v && b.i < a.i)) return b;
  return a;
}

__device__ __forceinline__ Best warp_best(Best c) {
#pragma unroll
  for (int o = kWarpSize / 2; o > 0; o >>= 1) {
    Best other;
    other.v = __shfl_xor_sync(0xffffffffu, c.v, o);
    other.i = __shfl_xor_sync(0xffffffffu, c.i, o);
    c = better(c, other);
  }
  return c;
}

// The best (value, index) of row r over the block: thread t scans elements t, t + kThreads, … (coalesced), then the
// block reduces; the answer is valid in thread 0. NaN is skipped: a row of NaN only gives kNone.
__device__ __forceinline__ Best block_best(const float* row, int64_t n) {
  Best c{0.0f, kNone};
  for (int64_t k = threadIdx.x; k < n; k += kThreads) {
    const float v = row[k];
    if (v != v) continue;  // NaN
    if (c.i == kNone || v > c.v) c = Best{v, static_cast<int32_t>(k)};  // k rises: the first of equal values stays
  }
  c = warp_best(c);
  __shared__ float sv[kThreads / kWarpSize];
  __shared__ int32_t si[kThreads / kWarpSize];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  if (lane == 0) sv[warp] = c.v, si[warp] = c.i;
  __syncthreads();
  if (warp == 0) {
    c = lane < kThreads / kWarpSize ? Best{sv[lane], si[lane]} : Best{0.0f, kNone};
    c = warp_best(c);
  }
  return c;
}

// grid (rows), block kThreads. x[0] NaN: std::max_element never moves off index 0, so the answer is 0.
__global__ void __launch_bounds__(kThreads) argmax_kernel(Rows x, int32_t* ids) {
  const float* row = static_cast<const float*>(x.data) + x.row_offset(blockIdx.x);
  const Best c = block_best(row, x.n);
  if (threadIdx.x == 0) {
    const float first = row[0];
    ids[blockIdx.x] = (first != first || c.i == kNone) ? 0 : c.i;
  }
}

// grid (rows), block kThreads: best[2r] = the maximum, best[2r + 1] = its index as an exact f32 (n ≤ 2^24).
__global__ void __launch_bounds__(kThreads) max_rows_kernel(Rows x, float* best, bool nan_first) {
  const float* row = static_cast<const float*>(x.data) + x.row_offset(blockIdx.x);
  const Best c = block_best(row, x.n);
  if (threadIdx.x == 0) {
    const float first = row[0];
    float* out = best + 2 * static_cast<int64_t>(blockIdx.x);
    if (nan_first && first != first) {
      out[0] = first, out[1] = 0.0f;
    } else if (c.i == kNone) {
      out[0] = __int_as_float(0x7fc00000), out[1] = -1.0f;  // a row of NaN only
    } else {
      out[0] = c.v, out[1] = static_cast<float>(c.i);
    }
  }
}

}  // namespace

void argmax_rows(cudaStream_t stream, const Rows& x, int32_t* ids) {
  if (x.rows == 0) return;
  argmax_kernel<<<static_cast<unsigned>(x.rows), kThreads, 0, stream>>>(x, ids);
}

void max_rows(cudaStream_t stream, const Rows& x, float* best, bool nan_first) {
  if (x.rows == 0) return;
  max_rows_kernel<<<static_cast<unsigned>(x.rows), kThreads, 0, stream>>>(x, best, nan_first);
}

}  // namespace ninfer::kern
