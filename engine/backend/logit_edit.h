// Owns the sparse edits a sampler makes to a logit row before it chooses (logit_bias, the repetition penalty, the
// presence and frequency penalties) as one arithmetic that the host sampler, the CPU op and the CUDA kernel all run
// (C++17, host and device), so a row edited on a device holds the bits the host would have written.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define NINFER_LOGIT_EDIT_HD __host__ __device__ __forceinline__
#else
#define NINFER_LOGIT_EDIT_HD inline
#endif

namespace ninfer {

// One id of one row: x ← apply_logit_edit(x, add, scale, sub). Each part has an exact identity, so an id that only
// some processors touch needs no flags: add −0.0 (x + −0 is x for every x, −0 included), scale 1, sub +0.
struct LogitEdit {
  int32_t row = 0;       // the row of the call's logits
  int32_t col = 0;       // the token id
  float add = -0.0f;     // logit_bias; −inf bans the id (a bias of −100 or less)
  float scale = 1.0f;    // the repetition penalty of an id in the prompt or the output
  float sub = 0.0f;      // presence + frequency · count of an id in the output
};
static_assert(sizeof(LogitEdit) == 5 * sizeof(int32_t), "uploaded to a device as five 32-bit words per edit");

// In the order the processors run on the host: the bias (or the ban), then the repetition penalty (a positive logit
// divided by it, any other multiplied), then the presence and frequency penalties subtracted.
NINFER_LOGIT_EDIT_HD float apply_logit_edit(float x, float add, float scale, float sub) {
  x = add == -INFINITY ? -INFINITY : x + add;
  if (scale != 1.0f) x = x > 0.0f ? x / scale : x * scale;
  return x - sub;
}

}  // namespace ninfer
