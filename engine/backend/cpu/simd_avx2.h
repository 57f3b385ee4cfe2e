// Owns the AVX2 building blocks the CPU kernel files share: the target attribute, horizontal sum / max, and the
// dot / axpy loops over f32 against any 8-wide loader (f32, bf16, f16, int8 codes). x86-64 only.
#pragma once

#if defined(__x86_64__) || defined(_M_X64)
#define NINFER_HAVE_AVX2_SIMD 1
#include <immintrin.h>

#include <cstdint>

#if defined(__GNUC__) || defined(__clang__)
// The features every AVX2 kernel here needs; files that also need F16C add it to their own attribute (a helper
// compiled for a subset of the caller's features inlines into it).
#define NINFER_SIMD_AVX2 __attribute__((target("avx2,fma")))
#else
#define NINFER_SIMD_AVX2
#endif

namespace ninfer::cpu::simd {

NINFER_SIMD_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

NINFER_SIMD_AVX2 inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

NINFER_SIMD_AVX2 inline __m256 load8_f32(const float* p) { return _mm256_loadu_ps(p); }
inline float scalar_f32(float v) { return v; }

// Σ a[i]·b[i] with two accumulators; load8(b + i) gives 8 f32, scalar(b[i]) one (the tail).
template <typename T, typename Load8, typename Scalar>
NINFER_SIMD_AVX2 inline float dot(const float* a, const T* b, int64_t n, Load8 load8, Scalar scalar) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), load8(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), load8(b + i + 8), s1);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), load8(b + i), s0);
  float s = hsum(_mm256_add_ps(s0, s1));
  for (; i < n; ++i) s += a[i] * scalar(b[i]);
  return s;
}

// y[i] += a · x[i].
template <typename T, typename Load8, typename Scalar>
NINFER_SIMD_AVX2 inline void axpy(float a, const T* x, float* y, int64_t n, Load8 load8, Scalar scalar) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, load8(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * scalar(x[i]);
}

}  // namespace ninfer::cpu::simd

#endif
