// AVX-512 (F, BW, VL, VNNI) NVFP4 kernels: packed weights decoded in registers,
// 256 elements (16 blocks) per step; for W4A4 the lane kernel (one 32-bit lane
// per block, the weight chunk decoded once for 1-8 rows) and the 4 x 1 kernel
// it replaced (each activation row's signs folded into the weight lookup; kept
// for before/after benches), which sums in another order.
// The lane kernel and the helpers both files share are in
// nvfp4_lanes_avx512.inc (also compiled with VBMI: nvfp4_avx512_vbmi.cpp).
// Every function carries a target attribute and runs only after the runtime CPU
// check in nvfp4_avx512_kernels() / nvfp4_avx512_vbmi_kernels().
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge operand of their masked builtins and then
// warn about it wherever they are inlined (avx512fintrin.h); nothing in this file reads such a value.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <algorithm>
#include <array>
#include <utility>

#include "engine/backend/cpu/kernels.h"
#include "engine/backend/cpu/nvfp4_linear.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NINFER_HAVE_AVX512_VARIANT 1
#include <immintrin.h>
#endif

namespace ninfer::cpu {

#if NINFER_HAVE_AVX512_VARIANT

#define NINFER_AVX512                                                          \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,fma")))

namespace {

// E4M3 bytes (one per 32-bit lane) -> f32, exactly: the 7 magnitude bits
// shifted into an f32's exponent/mantissa field give value · 2^-120 (subnormal
// E4M3 becomes an f32 subnormal), so one multiply by 2^120 is exact. NaN codes
// (0x7F/0xFF) are not decoded as NaN: a weight or activation scale never holds
// one.
NINFER_AVX512 inline __m512 e4m3_to_f32(__m512i b) {
  const __m512i mag =
      _mm512_slli_epi32(_mm512_and_si512(b, _mm512_set1_epi32(0x7F)), 20);
  const __m512i sign =
      _mm512_slli_epi32(_mm512_and_si512(b, _mm512_set1_epi32(0x80)), 24);
  return _mm512_mul_ps(_mm512_castsi512_ps(_mm512_or_si512(mag, sign)),
                       _mm512_set1_ps(0x1p120f));
}

// 2·e2m1 of a sign-magnitude nibble as int8, replicated in the four 128-bit
// lanes for vpshufb.
NINFER_AVX512 inline __m512i lut_e2m1x2() {
  return _mm512_broadcast_i32x4(
      _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12));
}

#define NINFER_LANES_VBMI 0
#include "engine/backend/cpu/nvfp4_lanes_avx512.inc"

// The 16 E4M3 weight scales of step k as f32, block b at lanes 2b and 2b+1:
// blocks 0-7 in sw[0], 8-15 in sw[1].
NINFER_AVX512 inline void step_scales(const uint8_t *ws, int64_t k,
                                      __m512 sw[2]) {
  const __m128i sraw =
      _mm_loadu_si128(reinterpret_cast<const __m128i *>(ws + k / 16));
  sw[0] = e4m3_to_f32(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(sraw, sraw)));
  sw[1] = e4m3_to_f32(_mm512_cvtepu8_epi32(_mm_unpackhi_epi8(sraw, sraw)));
}

template <int MR>
NINFER_AVX512 void w4a4_rows(const Nvfp4Weight &w, const Nvfp4A4Rows &a,
                             int64_t m0, int64_t n0, int64_t n1, float *y,
                             int64_t ys, bool acc) {
  const int64_t K = w.K, K256 = K / 256 * 256;
  const __m512i lut = lut_e2m1x2(), low4 = _mm512_set1_epi8(0x0F);
  const uint8_t *mlo[MR], *mhi[MR], *slo[MR], *shi[MR];
  const float *sa[MR];
  for (int m = 0; m < MR; ++m) {
    mlo[m] = a.mag_lo(m0 + m), mhi[m] = a.mag_hi(m0 + m),
    slo[m] = a.sgn_lo(m0 + m), shi[m] = a.sgn_hi(m0 + m);
    sa[m] = a.scale_dup(m0 + m);
  }
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t *wc = w.codes + n * (K / 2);
    const uint8_t *ws = w.scales + n * (K / 16);
    __m512 accv[MR];
    for (int m = 0; m < MR; ++m)
      accv[m] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K256; k += 256) {
      const int64_t j = k / 2; // code byte offset
      prefetch_step(wc, ws, k);
      __m512 sw[2];
      step_scales(ws, k, sw);
      const __m512 &sw0 = sw[0], &sw1 = sw[1];
      const __m512i c0 = _mm512_loadu_si512(wc + j),
                    c1 = _mm512_loadu_si512(wc + j + 64);
      const __m512i lo0 = _mm512_and_si512(c0, low4),
                    hi0 = _mm512_and_si512(_mm512_srli_epi16(c0, 4), low4);
      const __m512i lo1 = _mm512_and_si512(c1, low4),
                    hi1 = _mm512_and_si512(_mm512_srli_epi16(c1, 4), low4);
      for (int m = 0; m < MR; ++m) {
        // The product's sign is sign(a) XOR sign(w): flip the weight nibble's
        // sign bit, then look the value up.
        const __m512i wl0 = _mm512_shuffle_epi8(
            lut, _mm512_xor_si512(lo0, _mm512_loadu_si512(slo[m] + j)));
        const __m512i wh0 = _mm512_shuffle_epi8(
            lut, _mm512_xor_si512(hi0, _mm512_loadu_si512(shi[m] + j)));
        const __m512i wl1 = _mm512_shuffle_epi8(
            lut, _mm512_xor_si512(lo1, _mm512_loadu_si512(slo[m] + j + 64)));
        const __m512i wh1 = _mm512_shuffle_epi8(
            lut, _mm512_xor_si512(hi1, _mm512_loadu_si512(shi[m] + j + 64)));
        __m512i i0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(),
                                         _mm512_loadu_si512(mlo[m] + j), wl0);
        i0 = _mm512_dpbusd_epi32(i0, _mm512_loadu_si512(mhi[m] + j), wh0);
        __m512i i1 = _mm512_dpbusd_epi32(
            _mm512_setzero_si512(), _mm512_loadu_si512(mlo[m] + j + 64), wl1);
        i1 = _mm512_dpbusd_epi32(i1, _mm512_loadu_si512(mhi[m] + j + 64), wh1);
        // Lanes 2b, 2b+1 hold block b's integer dot (halves); I · (sa · sw) is
        // exact in f32.
        const __m512 p0 = _mm512_mul_ps(sw0, _mm512_loadu_ps(sa[m] + k / 8));
        const __m512 p1 =
            _mm512_mul_ps(sw1, _mm512_loadu_ps(sa[m] + k / 8 + 16));
        accv[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i0), p0, accv[m]);
        accv[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i1), p1, accv[m]);
      }
    }
    store_w4a4<MR>(accv, w, a, m0, n, K256, y, ys, acc);
  }
}

NINFER_AVX512 void w4a4_4x1(const Nvfp4Weight &w, const Nvfp4A4Rows &a,
                            int64_t m0, int rows, int64_t n0, int64_t n1,
                            float *y, int64_t ys, bool acc) {
  switch (rows) {
  case 1:
    w4a4_rows<1>(w, a, m0, n0, n1, y, ys, acc);
    break;
  case 2:
    w4a4_rows<2>(w, a, m0, n0, n1, y, ys, acc);
    break;
  case 3:
    w4a4_rows<3>(w, a, m0, n0, n1, y, ys, acc);
    break;
  default:
    w4a4_rows<4>(w, a, m0, n0, n1, y, ys, acc);
    break;
  }
}

// Writes rows [r0, r1)'s lane form from their blocked form (val_lo / val_hi,
// corr) and scale_dup.
NINFER_AVX512 void write_lanes(Nvfp4A4Rows &out, int64_t r0, int64_t r1) {
  const __m512i ie = first_dwords(), io = second_dwords();
  const int64_t chunks = out.K / 256;
  for (int64_t r = r0; r < r1; ++r) {
    const int8_t *vlo = out.val_lo(r), *vhi = out.val_hi(r);
    const int32_t *corr = out.corr(r);
    const float *sdup = out.scale_dup(r);
    for (int64_t c = 0; c < chunks; ++c) {
      auto *dst = const_cast<uint8_t *>(out.lane_chunk(r, c));
      const int8_t *vals[2] = {vlo + 128 * c, vhi + 128 * c};
      for (int h = 0; h < 2; ++h) { // A_lo, A_hi, B_lo, B_hi
        const __m512i v0 = _mm512_loadu_si512(vals[h]),
                      v1 = _mm512_loadu_si512(vals[h] + 64);
        _mm512_storeu_si512(dst + 64 * h,
                            _mm512_permutex2var_epi32(v0, ie, v1));
        _mm512_storeu_si512(dst + 128 + 64 * h,
                            _mm512_permutex2var_epi32(v0, io, v1));
      }
      const __m512i h0 = _mm512_loadu_si512(corr + 32 * c),
                    h1 = _mm512_loadu_si512(corr + 32 * c + 16);
      const __m512i block =
          _mm512_add_epi32(_mm512_permutex2var_epi32(h0, ie, h1),
                           _mm512_permutex2var_epi32(h0, io, h1));
      _mm512_storeu_si512(dst + 256,
                          _mm512_sub_epi32(_mm512_setzero_si512(), block));
      const __m512 s =
          _mm512_permutex2var_ps(_mm512_loadu_ps(sdup + 32 * c), ie,
                                 _mm512_loadu_ps(sdup + 32 * c + 16));
      _mm512_storeu_ps(reinterpret_cast<float *>(dst + 320),
                       _mm512_mul_ps(s, _mm512_set1_ps(0x1p64f)));
    }
  }
}

// The table's activation quantizer: the AVX2 one, then the lane form.
NINFER_AVX512 void prepare_a4_lanes(const float *x, int64_t xs, int64_t r0,
                                    int64_t r1, float input_scale,
                                    Nvfp4A4Rows &out) {
  nvfp4_prepare_a4_avx2(x, xs, r0, r1, input_scale, out);
  write_lanes(out, r0, r1);
}

template <int MR>
NINFER_AVX512 void w4a16_rows(const Nvfp4Weight &w, const float *xp, int64_t n0,
                              int64_t n1, float *y, int64_t ys, bool acc) {
  const int64_t K = w.K, K256 = K / 256 * 256;
  // vpermps reads the low 4 index bits: a 16-entry f32 table of e2m1
  // (dequantize_nvfp4's, code 8 = +0).
  const __m512 lut =
      _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, 0.0f,
                     -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f);
  const __m512 s2 = _mm512_set1_ps(w.weight_scale_2);
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t *wc = w.codes + n * (K / 2);
    const uint8_t *ws = w.scales + n * (K / 16);
    __m512 accv[MR];
    for (int m = 0; m < MR; ++m)
      accv[m] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K256; k += 256) {
      const int64_t j = k / 2;
      _mm_prefetch(reinterpret_cast<const char *>(wc + j + kNvfp4PrefetchAhead),
                   _MM_HINT_T1);
      _mm_prefetch(
          reinterpret_cast<const char *>(wc + j + kNvfp4PrefetchAhead + 64),
          _MM_HINT_T1);
      // bs_b = e4m3(s_b) · weight_scale_2, one rounding, as dequantize_nvfp4.
      const __m512 bs =
          _mm512_mul_ps(e4m3_to_f32(_mm512_cvtepu8_epi32(_mm_loadu_si128(
                            reinterpret_cast<const __m128i *>(ws + k / 16)))),
                        s2);
      for (int p = 0; p < 8;
           ++p) { // blocks 2p, 2p+1: 16 code bytes, one per lane
        const __m512i z = _mm512_cvtepu8_epi32(_mm_loadu_si128(
            reinterpret_cast<const __m128i *>(wc + j + 16 * p)));
        const __m512i idx = _mm512_or_si512(
            _mm512_set1_epi32(2 * p),
            _mm512_maskz_set1_epi32(static_cast<__mmask16>(0xFF00), 1));
        const __m512 sp = _mm512_permutexvar_ps(idx, bs);
        const __m512 we = _mm512_mul_ps(_mm512_permutexvar_ps(z, lut), sp);
        const __m512 wo = _mm512_mul_ps(
            _mm512_permutexvar_ps(_mm512_srli_epi32(z, 4), lut), sp);
        for (int m = 0; m < MR; ++m) {
          const float *xr = xp + m * K + k + 32 * p;
          accv[m] = _mm512_fmadd_ps(_mm512_loadu_ps(xr), we, accv[m]);
          accv[m] = _mm512_fmadd_ps(_mm512_loadu_ps(xr + 16), wo, accv[m]);
        }
      }
    }
    for (int m = 0; m < MR; ++m) {
      float s = _mm512_reduce_add_ps(accv[m]);
      if (K256 < K)
        s += nvfp4_w4a16_tail(w, n, xp + m * K, K256);
      float &out = y[m * ys + n];
      out = acc ? out + s : s;
    }
  }
}

NINFER_AVX512 void w4a16(const Nvfp4Weight &w, const float *xp, int rows,
                         int64_t n0, int64_t n1, float *y, int64_t ys,
                         bool acc) {
  switch (rows) {
  case 1:
    w4a16_rows<1>(w, xp, n0, n1, y, ys, acc);
    break;
  case 2:
    w4a16_rows<2>(w, xp, n0, n1, y, ys, acc);
    break;
  case 3:
    w4a16_rows<3>(w, xp, n0, n1, y, ys, acc);
    break;
  default:
    w4a16_rows<4>(w, xp, n0, n1, y, ys, acc);
    break;
  }
}

} // namespace

const Nvfp4Kernels *nvfp4_avx512_kernels() {
  static const bool ok = cpu_supports_avx512_vnni();
  static const Nvfp4Kernels k{"avx512-vnni", w4a4_lanes, w4a16,
                              prepare_a4_lanes, kNvfp4LaneMaxRows};
  return ok ? &k : nullptr;
}

const Nvfp4Kernels *nvfp4_avx512_vbmi_kernels() {
  static const bool ok = cpu_supports_avx512_vbmi(); // VNNI's set and VBMI
  static const Nvfp4Kernels k{"avx512-vbmi", nvfp4_w4a4_lanes_vbmi, w4a16,
                              prepare_a4_lanes, kNvfp4LaneMaxRows};
  return ok ? &k : nullptr;
}

const Nvfp4Kernels *nvfp4_avx512_4x1_kernels() {
  static const Nvfp4Kernels k{"avx512-vnni-4x1", w4a4_4x1, w4a16,
                              nvfp4_prepare_a4_avx2}; // AVX-512 implies AVX2
  return nvfp4_avx512_kernels() ? &k : nullptr;
}

#else

const Nvfp4Kernels *nvfp4_avx512_kernels() { return nullptr; }
const Nvfp4Kernels *nvfp4_avx512_vbmi_kernels() {
  static const bool ok = cpu_supports_avx512_vbmi(); // VNNI's set and VBMI
  static const Nvfp4Kernels k{"avx512-vbmi", nvfp4_w4a4_lanes_vbmi, w4a16,
                              prepare_a4_lanes, kNvfp4LaneMaxRows};
  return ok ? &k : nullptr;
}

const Nvfp4Kernels *nvfp4_avx512_4x1_kernels() { return nullptr; }

#endif

} // namespace ninfer::cpu
