// Owns the plain views the CUDA kernels take (C++17, host and device): a tensor as rows of its last dimension,
// element dtypes, and the packed batch/paged-KV index arrays already on the device.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define NINFER_HD __host__ __device__ __forceinline__
#else
#define NINFER_HD inline
#endif

struct CUstream_st;
using cudaStream_t = CUstream_st*;  // the same type cuda_runtime_api.h declares, without pulling CUDA into .cpp users

namespace ninfer::kern {

// Element types a kernel reads or writes (values follow engine/artifact/dtype.h's DType).
enum class KType : uint8_t { kF32 = 0, kF16 = 1, kBF16 = 2, kI8 = 3, kI32 = 4, kF8E4M3 = 5, kNvfp4 = 6 };

// A tensor of up to 4 dims seen as `rows` rows of `n` contiguous elements. Row r is found by splitting r over the
// leading dims (shape lead[0..nlead), outermost first) and adding their element strides: this covers the strided
// per-head views of the forward ([T, heads, hd] with strides {row, head, 1}).
struct Rows {
  void* data = nullptr;
  KType type = KType::kF32;
  int64_t rows = 0, n = 0;
  int nlead = 0;
  int64_t lead[3] = {1, 1, 1};
  int64_t lead_stride[3] = {0, 0, 0};

  // Element offset of row r. The loop has a constant trip count (unrolled in device code), so a kernel's Rows
  // parameter is never indexed dynamically and stays out of local memory.
  NINFER_HD int64_t row_offset(int64_t r) const {
    int64_t off = 0;
#if defined(__CUDACC__)
#pragma unroll
#endif
    for (int d = 2; d >= 0; --d) {
      if (d < nlead) {
        off += (r % lead[d]) * lead_stride[d];
        r /= lead[d];
      }
    }
    return off;
  }
  template <typename T>
  NINFER_HD T* row(int64_t r) const {
    return static_cast<T*>(data) + row_offset(r);
  }
};

// A device array of n int32 values (an index span uploaded by the backend).
struct I32Span {
  const int32_t* data = nullptr;
  int64_t n = 0;
};

// A fault a kernel found in its data (a non-finite K/V row, an index out of range): kernels record the first one
// with record_fault() (kernels/common/fault.cuh) in host-mapped memory, and the backend raises it as an Error naming
// the op at its next synchronize(), or at once with sync_every_op.
enum class FaultCode : int32_t {
  kNone = 0,
  kKvNonFinite = 1,   // kv_write: a = token row, b = kv head, c = 0 for K / 1 for V
  kIndexRange = 2,    // a = which index (FaultIndex), b = the value, c = the limit it must stay below
  kPlanOverflow = 3,  // a device-side work plan outgrew the bounds its launch was sized by: a = which plan (0 =
                      // attention), b = the planned count, c = the bound (a bug, not bad data)
};
enum class FaultIndex : int32_t {
  kBlockTable = 0,    // attention: a physical block id outside the cache
  kSlot = 1,          // kv_write: a slot outside the cache
  kStateSlot = 2,     // GDN ops: a state or checkpoint row outside the state tensor
  kToken = 3,         // embedding: a token id outside the table
};
struct DeviceFault {
  int32_t code;  // FaultCode; 0 = none. Written last, with the fields before it.
  int32_t pad;
  int64_t a, b, c;
};

}  // namespace ninfer::kern
