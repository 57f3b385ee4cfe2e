// AVX2 + FMA int8 KV kernels: codes widened to f32 in registers (vpmovsxbd + vcvtdq2ps). Every function carries a
// target attribute and runs only after the runtime CPU check in int8_kv_avx2_kernels().
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "engine/backend/cpu/attention_int8.h"
#include "engine/backend/cpu/kernels.h"

#if defined(__x86_64__) || defined(_M_X64)
#define NINFER_HAVE_AVX2_INT8KV 1
#include "engine/backend/cpu/simd_avx2.h"
#endif

namespace ninfer::cpu {

#if NINFER_HAVE_AVX2_INT8KV

#if defined(__GNUC__) || defined(__clang__)
#define NINFER_AVX2 __attribute__((target("avx2,fma")))
#else
#define NINFER_AVX2
#endif

namespace {


using simd::hmax;

// 8 codes -> 8 f32 (exact).
NINFER_AVX2 inline __m256 load8(const int8_t* q) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))));
}

NINFER_AVX2 float quantize_avx2(const float* x, int8_t* q, int64_t n, bool* non_finite) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 fmax = _mm256_set1_ps(FLT_MAX);
  __m256 vmax = _mm256_setzero_ps(), vbad = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask);
    vbad = _mm256_or_ps(vbad, _mm256_cmp_ps(a, fmax, _CMP_NLE_UQ));  // > FLT_MAX or unordered: inf / NaN
    vmax = _mm256_max_ps(vmax, a);
  }
  float amax = hmax(vmax);
  bool bad = _mm256_movemask_ps(vbad) != 0;
  for (int64_t j = i; j < n; ++j) {
    const float a = std::fabs(x[j]);
    bad |= !(a <= FLT_MAX);
    amax = std::max(amax, a);
  }
  *non_finite = bad;
  const float scale = amax / 127.0f;
  if (!(scale > 0.0f)) {
    std::fill(q, q + n, int8_t{0});
    return 0.0f;
  }
  const __m256 vs = _mm256_set1_ps(scale), lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  for (i = 0; i + 8 <= n; i += 8) {
    __m256 c = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(x + i), vs), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    c = _mm256_min_ps(_mm256_max_ps(c, lo), hi);
    const __m256i c32 = _mm256_cvtps_epi32(c);
    const __m128i c16 = _mm_packs_epi32(_mm256_castsi256_si128(c32), _mm256_extracti128_si256(c32, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(q + i), _mm_packs_epi16(c16, c16));
  }
  for (; i < n; ++i) q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] / scale), -127.0f, 127.0f));
  return scale;
}

NINFER_AVX2 float dot_avx2(const float* a, const int8_t* q, int64_t n) {
  return simd::dot(a, q, n, load8, [](int8_t c) { return static_cast<float>(c); });
}

NINFER_AVX2 void axpy_avx2(float a, const int8_t* q, float* y, int64_t n) {
  simd::axpy(a, q, y, n, load8, [](int8_t c) { return static_cast<float>(c); });
}

}  // namespace

const Int8KvKernels* int8_kv_avx2_kernels() {
  static const bool ok = cpu_supports_avx2_fma_f16c();
  static const Int8KvKernels k{"avx2", quantize_avx2, dot_avx2, axpy_avx2};
  return ok ? &k : nullptr;
}

#else  // not x86-64

const Int8KvKernels* int8_kv_avx2_kernels() { return nullptr; }

#endif

}  // namespace ninfer::cpu
