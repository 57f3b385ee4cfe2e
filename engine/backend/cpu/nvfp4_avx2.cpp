// AVX2 + FMA NVFP4 kernels: packed weights decoded in registers (vpshufb LUT), W4A4 through vpmaddubsw/vpmaddwd.
// Every function carries a target attribute and runs only after the runtime CPU check in nvfp4_avx2_kernels().
#include <algorithm>

#include "engine/backend/cpu/kernels.h"
#include "engine/backend/cpu/nvfp4_linear.h"
#include "engine/core/error.h"
#include "engine/quant/nvfp4.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NINFER_HAVE_AVX2_NVFP4 1
#include "engine/backend/cpu/simd_avx2.h"
#endif

namespace ninfer::cpu {

#if NINFER_HAVE_AVX2_NVFP4

#define NINFER_AVX2 __attribute__((target("avx2,fma")))

namespace {

// E4M3 bytes (one per 32-bit lane) -> f32 exactly (see nvfp4_avx512.cpp); NaN codes are not decoded as NaN.
NINFER_AVX2 inline __m256 e4m3_to_f32(__m256i b) {
  const __m256i mag = _mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7F)), 20);
  const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x80)), 24);
  return _mm256_mul_ps(_mm256_castsi256_ps(_mm256_or_si256(mag, sign)), _mm256_set1_ps(0x1p120f));
}

NINFER_AVX2 inline __m256i ld(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// int8 values 2·e2m1 -> f32 e2m1 (exact: times 0.5) -> times the block scale: the dequantized weight, one rounding.
NINFER_AVX2 inline __m256 dequant8(__m128i v8, __m256 s) {
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v8)), _mm256_set1_ps(0.5f)), s);
}

using simd::hmax;
using simd::hsum;

// One threshold test of e2m1_encode8: -1 in the lanes where `a pred t` holds.
template <int Pred>
NINFER_AVX2 inline __m256i below(__m256 a, float t) {
  return _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(t), Pred));
}

// e2m1_encode of 8 quotients as int32 codes 0..15: the index counts the thresholds a = |q| lies above, written as
// 7 minus the ordered "at or below" tests so that NaN (0/0 when a block's denominator underflows) lands on 7 as in
// the scalar branch chain; the sign bit is q < 0 (false for -0 and NaN).
NINFER_AVX2 inline __m256i e2m1_encode8(__m256 q) {
  const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), q);
  __m256i idx = _mm256_add_epi32(below<_CMP_LE_OQ>(a, 0.25f), below<_CMP_LT_OQ>(a, 0.75f));
  idx = _mm256_add_epi32(idx, _mm256_add_epi32(below<_CMP_LE_OQ>(a, 1.25f), below<_CMP_LT_OQ>(a, 1.75f)));
  idx = _mm256_add_epi32(idx, _mm256_add_epi32(below<_CMP_LE_OQ>(a, 2.5f), below<_CMP_LT_OQ>(a, 3.5f)));
  idx = _mm256_add_epi32(_mm256_add_epi32(idx, below<_CMP_LE_OQ>(a, 5.0f)), _mm256_set1_epi32(7));
  const __m256i neg = _mm256_castps_si256(_mm256_cmp_ps(q, _mm256_setzero_ps(), _CMP_LT_OQ));
  return _mm256_or_si256(idx, _mm256_and_si256(neg, _mm256_set1_epi32(0x08)));
}

NINFER_AVX2 inline void store8(uint8_t* p, __m128i v) { _mm_storel_epi64(reinterpret_cast<__m128i*>(p), v); }

// One row of nvfp4_prepare_a4: nvfp4_quantize_row's recipe with the per-element division and e2m1 rounding
// 16 lanes at a time (the same IEEE divisions, so the same codes), the block scales in scalar code as there, and
// the kernels' magnitude / sign / scale layout written from the codes in registers.
NINFER_AVX2 void prepare_a4_row(const float* x, float input_scale, Nvfp4A4Rows& out, int64_t r) {
  const int64_t K = out.K;
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256i exp_mask = _mm256_set1_epi32(0x7F800000);
  __m256 vmax = _mm256_setzero_ps();
  __m256i bad = _mm256_setzero_si256();
  for (int64_t k = 0; k < K; k += 8) {
    const __m256 v = _mm256_loadu_ps(x + k);
    vmax = _mm256_max_ps(vmax, _mm256_and_ps(v, abs_mask));
    bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(v), exp_mask), exp_mask));
  }
  const float g = input_scale > 0.0f ? input_scale : nvfp4_weight_scale_2(hmax(vmax));
  if (!_mm256_testz_si256(bad, bad) || g == 0.0f) {  // a NaN/Inf or an all-zero dynamic row: the reference's
    nvfp4_prepare_a4(x, 0, r, r + 1, input_scale, out);  // special cases (x is row r's start, so stride 0)
    return;
  }
  auto* row = const_cast<uint8_t*>(out.row(r));
  uint8_t *mag_lo = row, *mag_hi = row + K / 2, *sgn_lo = row + K, *sgn_hi = row + 3 * K / 2;
  auto* sdup = reinterpret_cast<float*>(row + 2 * K);
  auto* codes = const_cast<uint8_t*>(out.codes(r));
  auto* scales = const_cast<uint8_t*>(out.scales(r));
  auto* val_lo = const_cast<int8_t*>(out.val_lo(r));
  auto* val_hi = const_cast<int8_t*>(out.val_hi(r));
  auto* corr = const_cast<int32_t*>(out.corr(r));
  const __m128i mag_lut = _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2, 3, 4, 6, 8, 12);
  const __m128i evens_odds = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  const float six_g = kE2M1Max * g;
  for (int64_t b = 0; b < K / 16; ++b) {
    const __m256 x0 = _mm256_loadu_ps(x + 16 * b), x1 = _mm256_loadu_ps(x + 16 * b + 8);
    const float block_amax = hmax(_mm256_max_ps(_mm256_and_ps(x0, abs_mask), _mm256_and_ps(x1, abs_mask)));
    float s = block_amax / six_g;
    if (s == 0.0f) s = 1.0f;
    s = std::clamp(s, kE4M3MinScale, kE4M3Max);
    const uint8_t sc = e4m3_encode(s);
    const float dec = e4m3_decode(sc);
    const __m256 den = _mm256_set1_ps(dec * g);
    const __m256i c0 = e2m1_encode8(_mm256_div_ps(x0, den)), c1 = e2m1_encode8(_mm256_div_ps(x1, den));
    const __m128i c16 = _mm_packus_epi16(
        _mm_packs_epi32(_mm256_castsi256_si128(c0), _mm256_extracti128_si256(c0, 1)),
        _mm_packs_epi32(_mm256_castsi256_si128(c1), _mm256_extracti128_si256(c1, 1)));  // codes of elements 0..15
    const __m128i eo = _mm_shuffle_epi8(c16, evens_odds);                                // 8 even | 8 odd
    const __m128i mag = _mm_shuffle_epi8(mag_lut, _mm_and_si128(eo, _mm_set1_epi8(0x07)));
    const __m128i sgn = _mm_and_si128(eo, _mm_set1_epi8(0x08));
    store8(mag_lo + 8 * b, mag);
    store8(mag_hi + 8 * b, _mm_srli_si128(mag, 8));
    store8(sgn_lo + 8 * b, sgn);
    store8(sgn_hi + 8 * b, _mm_srli_si128(sgn, 8));
    store8(codes + 8 * b, _mm_or_si128(eo, _mm_slli_epi16(_mm_srli_si128(eo, 8), 4)));
    // The blocked kernels' s8 values (magnitude, negated where the sign bit is set) and per half block 12 · Σ:
    // 16-bit pairs times 12, 32-bit quads [even 0-3, even 4-7, odd 0-3, odd 4-7], halves = quads 0+2 and 1+3.
    const __m128i neg = _mm_cmpeq_epi8(sgn, _mm_set1_epi8(0x08));
    const __m128i val = _mm_sub_epi8(_mm_xor_si128(mag, neg), neg);
    store8(reinterpret_cast<uint8_t*>(val_lo + 8 * b), val);
    store8(reinterpret_cast<uint8_t*>(val_hi + 8 * b), _mm_srli_si128(val, 8));
    const __m128i quads = _mm_madd_epi16(_mm_maddubs_epi16(_mm_set1_epi8(12), val), _mm_set1_epi16(1));
    store8(reinterpret_cast<uint8_t*>(corr + 2 * b), _mm_add_epi32(quads, _mm_srli_si128(quads, 8)));
    scales[b] = sc;
    sdup[2 * b] = sdup[2 * b + 1] = dec;
  }
  sdup[K / 8] = g;
}

template <int MR>
NINFER_AVX2 void w4a4_rows(const Nvfp4Weight& w, const Nvfp4A4Rows& a, int64_t m0, int64_t n0, int64_t n1, float* y,
                           int64_t ys, bool acc) {
  const int64_t K = w.K, K128 = K / 128 * 128;
  const __m256i lut = _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12, 0, 1, 2, 3, 4, 6, 8,
                                       12, 0, -1, -2, -3, -4, -6, -8, -12);
  const __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  const uint8_t *mlo[MR], *mhi[MR], *slo[MR], *shi[MR];
  const float* sa[MR];
  for (int m = 0; m < MR; ++m) {
    mlo[m] = a.mag_lo(m0 + m), mhi[m] = a.mag_hi(m0 + m), slo[m] = a.sgn_lo(m0 + m), shi[m] = a.sgn_hi(m0 + m);
    sa[m] = a.scale_dup(m0 + m);
  }
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* wc = w.codes + n * (K / 2);
    const uint8_t* ws = w.scales + n * (K / 16);
    __m256 accv[MR];
    for (int m = 0; m < MR; ++m) accv[m] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K128; k += 128) {
      const int64_t j = k / 2;
      _mm_prefetch(reinterpret_cast<const char*>(wc + j + kNvfp4PrefetchAhead), _MM_HINT_T1);
      if (k % 1024 == 0)  // one scale line per 1024 elements
        _mm_prefetch(reinterpret_cast<const char*>(ws + k / 16 + kNvfp4PrefetchAhead / 8), _MM_HINT_T1);
      const __m128i sraw = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(ws + k / 16));
      const __m128i sd = _mm_unpacklo_epi8(sraw, sraw);  // s0 s0 s1 s1 ... s7 s7
      const __m256 sw0 = e4m3_to_f32(_mm256_cvtepu8_epi32(sd));
      const __m256 sw1 = e4m3_to_f32(_mm256_cvtepu8_epi32(_mm_srli_si128(sd, 8)));
      const __m256i c0 = ld(wc + j), c1 = ld(wc + j + 32);
      const __m256i lo0 = _mm256_and_si256(c0, low4), hi0 = _mm256_and_si256(_mm256_srli_epi16(c0, 4), low4);
      const __m256i lo1 = _mm256_and_si256(c1, low4), hi1 = _mm256_and_si256(_mm256_srli_epi16(c1, 4), low4);
      for (int m = 0; m < MR; ++m) {
        const __m256i wl0 = _mm256_shuffle_epi8(lut, _mm256_xor_si256(lo0, ld(slo[m] + j)));
        const __m256i wh0 = _mm256_shuffle_epi8(lut, _mm256_xor_si256(hi0, ld(shi[m] + j)));
        const __m256i wl1 = _mm256_shuffle_epi8(lut, _mm256_xor_si256(lo1, ld(slo[m] + j + 32)));
        const __m256i wh1 = _mm256_shuffle_epi8(lut, _mm256_xor_si256(hi1, ld(shi[m] + j + 32)));
        // u8 · s8 pairs (|v| <= 144 each, pair sums <= 288, no saturation), then pairs of pairs into int32.
        const __m256i i0 = _mm256_madd_epi16(
            _mm256_add_epi16(_mm256_maddubs_epi16(ld(mlo[m] + j), wl0), _mm256_maddubs_epi16(ld(mhi[m] + j), wh0)),
            ones);
        const __m256i i1 = _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(ld(mlo[m] + j + 32), wl1),
                                                              _mm256_maddubs_epi16(ld(mhi[m] + j + 32), wh1)),
                                             ones);
        const __m256 p0 = _mm256_mul_ps(sw0, _mm256_loadu_ps(sa[m] + k / 8));
        const __m256 p1 = _mm256_mul_ps(sw1, _mm256_loadu_ps(sa[m] + k / 8 + 8));
        accv[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i0), p0, accv[m]);
        accv[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i1), p1, accv[m]);
      }
    }
    for (int m = 0; m < MR; ++m) {
      float s = hsum(accv[m]);
      if (K128 < K) s += nvfp4_w4a4_blocks(w, n, a.codes(m0 + m), a.scales(m0 + m), K128 / 16, K / 16);
      const float r = s * ((a.global(m0 + m) * w.weight_scale_2) * 0.25f);
      float& out = y[m * ys + n];
      out = acc ? out + r : r;
    }
  }
}

NINFER_AVX2 void w4a4(const Nvfp4Weight& w, const Nvfp4A4Rows& a, int64_t m0, int rows, int64_t n0, int64_t n1,
                      float* y, int64_t ys, bool acc) {
  switch (rows) {
    case 1: w4a4_rows<1>(w, a, m0, n0, n1, y, ys, acc); break;
    case 2: w4a4_rows<2>(w, a, m0, n0, n1, y, ys, acc); break;
    case 3: w4a4_rows<3>(w, a, m0, n0, n1, y, ys, acc); break;
    default: w4a4_rows<4>(w, a, m0, n0, n1, y, ys, acc); break;
  }
}

template <int MR>
NINFER_AVX2 void w4a16_rows(const Nvfp4Weight& w, const float* xp, int64_t n0, int64_t n1, float* y, int64_t ys,
                            bool acc) {
  const int64_t K = w.K, K256 = K / 256 * 256;
  const __m128i lut = _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
  const __m128i low4 = _mm_set1_epi8(0x0F);
  const __m256 s2 = _mm256_set1_ps(w.weight_scale_2);
  alignas(32) float bs[16];
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* wc = w.codes + n * (K / 2);
    const uint8_t* ws = w.scales + n * (K / 16);
    __m256 accv[MR];
    for (int m = 0; m < MR; ++m) accv[m] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K256; k += 256) {
      const int64_t j = k / 2;
      _mm_prefetch(reinterpret_cast<const char*>(wc + j + kNvfp4PrefetchAhead), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(wc + j + kNvfp4PrefetchAhead + 64), _MM_HINT_T1);
      const __m128i sraw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ws + k / 16));
      // bs_b = e4m3(s_b) · weight_scale_2, one rounding, as dequantize_nvfp4.
      _mm256_store_ps(bs, _mm256_mul_ps(e4m3_to_f32(_mm256_cvtepu8_epi32(sraw)), s2));
      _mm256_store_ps(bs + 8, _mm256_mul_ps(e4m3_to_f32(_mm256_cvtepu8_epi32(_mm_srli_si128(sraw, 8))), s2));
      for (int p = 0; p < 8; ++p) {  // blocks 2p (code bytes 0-7) and 2p+1 (8-15)
        const __m128i cb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wc + j + 16 * p));
        const __m128i vl = _mm_shuffle_epi8(lut, _mm_and_si128(cb, low4));
        const __m128i vh = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(cb, 4), low4));
        const __m256 sA = _mm256_broadcast_ss(bs + 2 * p), sB = _mm256_broadcast_ss(bs + 2 * p + 1);
        const __m256 eA = dequant8(vl, sA), eB = dequant8(_mm_srli_si128(vl, 8), sB);
        const __m256 oA = dequant8(vh, sA), oB = dequant8(_mm_srli_si128(vh, 8), sB);
        for (int m = 0; m < MR; ++m) {
          const float* xr = xp + m * K + k + 32 * p;
          accv[m] = _mm256_fmadd_ps(_mm256_loadu_ps(xr), eA, accv[m]);
          accv[m] = _mm256_fmadd_ps(_mm256_loadu_ps(xr + 8), eB, accv[m]);
          accv[m] = _mm256_fmadd_ps(_mm256_loadu_ps(xr + 16), oA, accv[m]);
          accv[m] = _mm256_fmadd_ps(_mm256_loadu_ps(xr + 24), oB, accv[m]);
        }
      }
    }
    for (int m = 0; m < MR; ++m) {
      float s = hsum(accv[m]);
      if (K256 < K) s += nvfp4_w4a16_tail(w, n, xp + m * K, K256);
      float& out = y[m * ys + n];
      out = acc ? out + s : s;
    }
  }
}

NINFER_AVX2 void w4a16(const Nvfp4Weight& w, const float* xp, int rows, int64_t n0, int64_t n1, float* y, int64_t ys,
                       bool acc) {
  switch (rows) {
    case 1: w4a16_rows<1>(w, xp, n0, n1, y, ys, acc); break;
    case 2: w4a16_rows<2>(w, xp, n0, n1, y, ys, acc); break;
    case 3: w4a16_rows<3>(w, xp, n0, n1, y, ys, acc); break;
    default: w4a16_rows<4>(w, xp, n0, n1, y, ys, acc); break;
  }
}

}  // namespace

void nvfp4_w4a4_avx2_4x1(const Nvfp4Weight& w, const Nvfp4A4Rows& a, int64_t m0, int rows, int64_t n0, int64_t n1,
                         float* y, int64_t ys, bool acc) {
  w4a4(w, a, m0, rows, n0, n1, y, ys, acc);
}

void nvfp4_prepare_a4_avx2(const float* x, int64_t xs, int64_t r0, int64_t r1, float input_scale, Nvfp4A4Rows& out) {
  for (int64_t r = r0; r < r1; ++r) prepare_a4_row(x + r * xs, input_scale, out, r);
}

const Nvfp4Kernels* nvfp4_avx2_kernels() {
  static const bool ok = cpu_supports_avx2_fma_f16c();  // one CPU probe for every AVX2 table (F16C: all AVX2 CPUs)
  static const Nvfp4Kernels k{"avx2", nvfp4_w4a4_blocked_avx2, w4a16, nvfp4_prepare_a4_avx2};
  return ok ? &k : nullptr;
}

const Nvfp4Kernels* nvfp4_avx2_4x1_kernels() {
  static const Nvfp4Kernels k{"avx2-4x1", w4a4, w4a16, nvfp4_prepare_a4_avx2};
  return nvfp4_avx2_kernels() ? &k : nullptr;
}

#else

const Nvfp4Kernels* nvfp4_avx2_kernels() { return nullptr; }
const Nvfp4Kernels* nvfp4_avx2_4x1_kernels() { return nullptr; }
void nvfp4_w4a4_avx2_4x1(const Nvfp4Weight&, const Nvfp4A4Rows&, int64_t, int, int64_t, int64_t, float*, int64_t, bool) {
  fail(ErrorKind::kUnsupported, "nvfp4: the AVX2 W4A4 kernel is not in this build");
}
void nvfp4_prepare_a4_avx2(const float* x, int64_t xs, int64_t r0, int64_t r1, float input_scale, Nvfp4A4Rows& out) {
  nvfp4_prepare_a4(x, xs, r0, r1, input_scale, out);
}

#endif

}  // namespace ninfer::cpu
