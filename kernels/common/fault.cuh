// Owns the device side of fault reporting: the first fault a kernel records wins; later ones are dropped.
#pragma once

#include "kernels/common/kview.h"

namespace ninfer::kern {

__device__ __forceinline__ void record_fault(DeviceFault* f, FaultCode code, int64_t a, int64_t b, int64_t c) {
  if (f == nullptr) return;
  // Claim the slot with a sentinel, fill it, then publish the code (the host reads it after a stream sync).
  if (atomicCAS(&f->code, 0, -1) != 0) return;
  f->a = a;
  f->b = b;
  f->c = c;
  __threadfence_system();
  atomicExch(&f->code, static_cast<int32_t>(code));
}

}  // namespace ninfer::kern
