// Owns the device-side shorthand for a kern::Rows row pointer (Rows::row_offset, whose constant-trip loop keeps a
// kernel's Rows parameter out of local memory).
#pragma once

#include <cstdint>

#include "kernels/common/kview.h"

namespace ninfer::kern {

template <typename T>
__device__ __forceinline__ T* row_ptr(const Rows& rows, int64_t r) {
  return rows.row<T>(r);
}

}  // namespace ninfer::kern
