// Portable int8 KV kernels (the reference the AVX2 variant matches: same codes and scales bit for bit).
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "engine/backend/cpu/attention_int8.h"

namespace ninfer::cpu {

namespace {

float quantize_scalar(const float* x, int8_t* q, int64_t n, bool* non_finite) {
  float amax = 0.0f;
  bool bad = false;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    bad |= !(a <= FLT_MAX);  // inf or NaN
    amax = std::max(amax, a);
  }
  *non_finite = bad;
  const float scale = amax / 127.0f;
  if (!(scale > 0.0f)) {  // an all-zero row (or one so small that amax / 127 underflows)
    std::fill(q, q + n, int8_t{0});
    return 0.0f;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float c = std::nearbyint(x[i] / scale);  // the default rounding mode: to nearest, ties to even
    q[i] = static_cast<int8_t>(std::clamp(c, -127.0f, 127.0f));
  }
  return scale;
}

float dot_scalar(const float* a, const int8_t* q, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * static_cast<float>(q[i]);
  return s;
}

void axpy_scalar(float a, const int8_t* q, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * static_cast<float>(q[i]);
}

}  // namespace

const Int8KvKernels& int8_kv_scalar_kernels() {
  static const Int8KvKernels k{"scalar", quantize_scalar, dot_scalar, axpy_scalar};
  return k;
}

}  // namespace ninfer::cpu
