// The samplers' sparse logit edits (logit_bias, repetition / presence / frequency penalties) on the device, with the
// host sampler's arithmetic (engine/backend/logit_edit.h), so a penalised row can be reduced to its argmax or its
// top-k pairs without leaving the device.
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/backend/logit_edit.h"
#include "kernels/sampling/sampling.h"

namespace ninfer::kern {
namespace {

constexpr int kThreads = 256;

// One thread per edit; the checked edits name distinct elements, so no two threads touch one.
__global__ void __launch_bounds__(kThreads) edit_logits_kernel(Rows x, const int32_t* edits, int64_t count) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= count) return;
  const int32_t* e = edits + 5 * i;
  float& v = x.row<float>(e[0])[e[1]];
  v = apply_logit_edit(v, __int_as_float(e[2]), __int_as_float(e[3]), __int_as_float(e[4]));
}

}  // namespace

void edit_logits(cudaStream_t stream, const Rows& x, const int32_t* edits, int64_t count) {
  if (count == 0) return;
  edit_logits_kernel<<<static_cast<unsigned>((count + kThreads - 1) / kThreads), kThreads, 0, stream>>>(x, edits,
                                                                                                       count);
}

}  // namespace ninfer::kern
