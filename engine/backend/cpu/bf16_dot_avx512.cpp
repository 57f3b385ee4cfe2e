// The AVX512-BF16 kernel of the bf16-activation linear (bf16_linear.h): register tiles of up to 4 activation rows
// × 4 weight rows, one vdpbf16ps per pair per 32 k. Every function carries a target attribute and runs only after
// the runtime CPU check in bf16_dot_avx512().
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge operand of their masked builtins and then
// warn about it wherever they are inlined (avx512fintrin.h); nothing in this file reads such a value.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "engine/backend/cpu/bf16_linear.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NINFER_HAVE_AVX512BF16_VARIANT 1
#include <immintrin.h>
#endif

namespace ninfer::cpu {

#if NINFER_HAVE_AVX512BF16_VARIANT

#define NINFER_AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace {

// Weight elements ahead of the current step that each row's stream prefetches into L2 (8 KiB, as the f32-activation
// GEMV: one row's 64-byte step is one cache line).
constexpr int64_t kAhead = 4096;

// The accumulators stay in registers only if no function takes their address: the whole step is written out here,
// its loops unrolled (GCC 12 otherwise kept them on the stack, storing and reloading every one each step).
template <int MR, int NR>
NINFER_AVX512BF16 void tile(const Bf16Rows& a, int64_t m0, const uint16_t* w, int64_t ws, int64_t n, float* y,
                            int64_t ys, bool acc) {
  const int64_t K = a.K;
  __m512 s[MR][NR];
#pragma GCC unroll 4
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) s[m][r] = _mm512_setzero_ps();
  const uint16_t* wr[NR];
  const uint16_t* xr[MR];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) wr[r] = w + (n + r) * ws;
#pragma GCC unroll 4
  for (int m = 0; m < MR; ++m) xr[m] = a.row(m0 + m);
  const __mmask32 tail = static_cast<__mmask32>((uint64_t{1} << (K % 32)) - 1);
  for (int64_t k = 0; k < K; k += 32) {
    const __mmask32 mask = k + 32 <= K ? ~__mmask32{0} : tail;  // weights past K read as zero
    __m512i wv[NR];
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {  // (past the matrix's end is harmless: prefetches never fault)
      _mm_prefetch(reinterpret_cast<const char*>(wr[r] + k + kAhead), _MM_HINT_T1);
      wv[r] = _mm512_maskz_loadu_epi16(mask, wr[r] + k);
    }
#pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) {
      const __m512bh xv = (__m512bh)_mm512_loadu_si512(xr[m] + k);  // zero past K
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) s[m][r] = _mm512_dpbf16_ps(s[m][r], xv, (__m512bh)wv[r]);
    }
  }
#pragma GCC unroll 4
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const float v = _mm512_reduce_add_ps(s[m][r]);
      float& out = y[m * ys + n + r];
      out = acc ? out + v : v;
    }
}

template <int MR>
NINFER_AVX512BF16 void rows(const Bf16Rows& a, int64_t m0, const uint16_t* w, int64_t ws, int64_t n0, int64_t n1,
                            float* y, int64_t ys, bool acc) {
  int64_t n = n0;
  for (; n + 4 <= n1; n += 4) tile<MR, 4>(a, m0, w, ws, n, y, ys, acc);
  for (; n < n1; ++n) tile<MR, 1>(a, m0, w, ws, n, y, ys, acc);
}

NINFER_AVX512BF16 void dot(const Bf16Rows& a, int64_t m0, int rows_, const uint16_t* w, int64_t ws, int64_t n0,
                           int64_t n1, float* y, int64_t ys, bool acc) {
  switch (rows_) {
    case 1: rows<1>(a, m0, w, ws, n0, n1, y, ys, acc); break;
    case 2: rows<2>(a, m0, w, ws, n0, n1, y, ys, acc); break;
    case 3: rows<3>(a, m0, w, ws, n0, n1, y, ys, acc); break;
    default: rows<4>(a, m0, w, ws, n0, n1, y, ys, acc); break;
  }
}

}  // namespace

Bf16DotFn bf16_dot_avx512() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
  return ok ? dot : nullptr;
}

#else

Bf16DotFn bf16_dot_avx512() { return nullptr; }

#endif

}  // namespace ninfer::cpu
