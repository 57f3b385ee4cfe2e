// Owns the device-side row addressing of kern::Rows views with the leading-dim loop fully unrolled, so a Rows kernel
// parameter stays in registers/constant space (Rows::row_offset's loop over a runtime nlead indexes the lead arrays
// dynamically, which copies the whole struct to local memory: a stack frame per thread).
//
// Usage: `row_ptr<float>(rows, r)` instead of `rows.row<float>(r)` in kernels; same result for any nlead <= 3.
#pragma once

#include <cstdint>

#include "kernels/common/kview.h"

namespace ninfer::kern {

__device__ __forceinline__ int64_t row_offset_unrolled(const Rows& rows, int64_t r) {
  int64_t off = 0;
#pragma unroll
  for (int d = 2; d >= 0; --d) {
    if (d < rows.nlead) {
      off += (r % rows.lead[d]) * rows.lead_stride[d];
      r /= rows.lead[d];
    }
  }
  return off;
}

template <typename T>
__device__ __forceinline__ T* row_ptr(const Rows& rows, int64_t r) {
  return static_cast<T*>(rows.data) + row_offset_unrolled(rows, r);
}

}  // namespace ninfer::kern
