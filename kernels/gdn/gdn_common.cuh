// Owns the device helpers the Gated-DeltaNet kernels share: direct row addressing of the [T, C] / [T, heads, d]
// views the ops take (no per-element division by the view's dims) and the row→sequence lookup of a packed batch.
#pragma once

#include <cstdint>

#include "kernels/common/kview.h"

namespace ninfer::kern::gdn {

// Row t of a [T, n] view (one leading dim).
template <typename T>
__device__ __forceinline__ T* row2(const Rows& r, int64_t t) {
  return static_cast<T*>(r.data) + t * r.lead_stride[0];
}
// Row (t, h) of a [T, heads, d] view (two leading dims).
template <typename T>
__device__ __forceinline__ T* row3(const Rows& r, int64_t t, int64_t h) {
  return static_cast<T*>(r.data) + t * r.lead_stride[0] + h * r.lead_stride[1];
}

// The sequence owning row t: the last s with q_start[s] <= t (an empty sequence shares its q_start with the next).
__device__ __forceinline__ int seq_of_row(const I32Span& q_start, int t) {
  int lo = 0, hi = static_cast<int>(q_start.n) - 1;  // q_start[lo] <= t < q_start[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) >> 1;
    if (q_start.data[mid] <= t) lo = mid;
    else hi = mid;
  }
  return lo;
}

}  // namespace ninfer::kern::gdn
