// AVX2 blocked W4A4 kernel: MR (2-4) activation rows per weight row, each weight chunk decoded once (vpshufb to
// offset u8 values) and reused over the MR rows, the activations' signs kept in the s8 operand. Bit-identical to the
// 4 x 1 AVX2 kernel of nvfp4_avx2.cpp: every output adds the same exact per-half-block terms into the same eight f32
// lanes in the same order. Every function carries a target attribute and runs only after the runtime CPU check in
// nvfp4_avx2_kernels().
#include "engine/backend/cpu/nvfp4_linear.h"
#include "engine/backend/cpu/simd_avx2.h"
#include "engine/core/error.h"

namespace ninfer::cpu {

// GCC / Clang on x86-64 only, as nvfp4_avx2.cpp (its only caller); MSVC builds that file's fallback.
#if NINFER_HAVE_AVX2_SIMD && (defined(__GNUC__) || defined(__clang__))
#define NINFER_AVX2 NINFER_SIMD_AVX2

namespace {

NINFER_AVX2 inline __m256i ld(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Four E4M3 weight scales (blocks b..b+3) -> eight f32 lanes, block b at lanes 2b and 2b+1, exactly: each byte
// placed in the top byte of its lane, an arithmetic shift puts the 7 magnitude bits at 20..26 (then a multiply by
// 2^120 is exact, as e4m3_to_f32 in nvfp4_avx2.cpp) and copies the sign to bits 27..31; the mask keeps bit 31.
NINFER_AVX2 inline __m256 scales4(const uint8_t* s) {
  int32_t raw;
  __builtin_memcpy(&raw, s, 4);
  const __m256i top = _mm256_shuffle_epi8(_mm256_set1_epi32(raw),
                                          _mm256_setr_epi8(-1, -1, -1, 0, -1, -1, -1, 0, -1, -1, -1, 1, -1, -1, -1, 1,
                                                           -1, -1, -1, 2, -1, -1, -1, 2, -1, -1, -1, 3, -1, -1, -1, 3));
  const __m256i bits = _mm256_and_si256(_mm256_srai_epi32(top, 4), _mm256_set1_epi32(static_cast<int32_t>(0x87F00000u)));
  return _mm256_mul_ps(_mm256_castsi256_ps(bits), _mm256_set1_ps(0x1p120f));
}

// One weight row n against MR activation rows, over 64-element chunks (one ymm of half-block lanes per output) of
// the first K128 elements. The weight chunk is decoded once for the MR rows: codes -> u8 (2·e2m1 + 12, in [0, 24])
// by vpshufb, four E4M3 scales -> f32 lanes. Per row, u8 · s8 activation pairs through vpmaddubsw (|pair| <= 576,
// even + odd <= 1152: no saturation), vpmaddwd to the half-block sums I' = I + 12·Σa, minus the row's correction
// gives the exact integer I; I · (sa · sw) is exact in f32 (11 + 8 significant bits), so each fmadd adds the value
// the 4 x 1 kernel adds. (More weight rows per tile, 2 or 4 with MR = 2..4, measured no faster: the per-pair
// integer and f32 work, not the decode, is the cost.)
template <int MR>
NINFER_AVX2 void row_tile(const Nvfp4Weight& w, const Nvfp4A4Rows& a, int64_t m0, int64_t n, float* y, int64_t ys,
                          bool acc) {
  const int64_t K = w.K, K128 = K / 128 * 128;
  const __m256i lut = _mm256_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0, 12, 13, 14, 15, 16,
                                       18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0);
  const __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  const uint8_t* wc = w.codes + n * (K / 2);
  const uint8_t* wsc = w.scales + n * (K / 16);
  const int8_t *vlo[MR], *vhi[MR];
  const int32_t* cr[MR];
  const float* sa[MR];
  for (int m = 0; m < MR; ++m)
    vlo[m] = a.val_lo(m0 + m), vhi[m] = a.val_hi(m0 + m), cr[m] = a.corr(m0 + m), sa[m] = a.scale_dup(m0 + m);
  __m256 accv[MR];
  for (int m = 0; m < MR; ++m) accv[m] = _mm256_setzero_ps();
  for (int64_t j = 0; j < K128 / 2; j += 32) {  // code byte offset of the chunk; its half blocks start at j / 4
    if (j % 64 == 0) {
      _mm_prefetch(reinterpret_cast<const char*>(wc + j + kNvfp4PrefetchAhead), _MM_HINT_T1);
      if (j % 512 == 0)  // one scale line per 1024 elements
        _mm_prefetch(reinterpret_cast<const char*>(wsc + j / 8 + kNvfp4PrefetchAhead / 8), _MM_HINT_T1);
    }
    const __m256i c = ld(wc + j);
    const __m256i wl = _mm256_shuffle_epi8(lut, _mm256_and_si256(c, low4));
    const __m256i wh = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(c, 4), low4));
    const __m256 sw = scales4(wsc + j / 8);
    const int64_t h = j / 4;
    for (int m = 0; m < MR; ++m) {
      const __m256i p16 = _mm256_add_epi16(_mm256_maddubs_epi16(wl, ld(vlo[m] + j)), _mm256_maddubs_epi16(wh, ld(vhi[m] + j)));
      const __m256i i32 = _mm256_sub_epi32(_mm256_madd_epi16(p16, ones), ld(cr[m] + h));
      accv[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i32), _mm256_mul_ps(sw, _mm256_loadu_ps(sa[m] + h)), accv[m]);
    }
  }
  for (int m = 0; m < MR; ++m) {
    float s = simd::hsum(accv[m]);
    if (K128 < K) s += nvfp4_w4a4_blocks(w, n, a.codes(m0 + m), a.scales(m0 + m), K128 / 16, K / 16);
    const float v = s * ((a.global(m0 + m) * w.weight_scale_2) * 0.25f);
    float& out = y[m * ys + n];
    out = acc ? out + v : v;
  }
}

template <int MR>
NINFER_AVX2 void sweep(const Nvfp4Weight& w, const Nvfp4A4Rows& a, int64_t m0, int64_t n0, int64_t n1, float* y,
                       int64_t ys, bool acc) {
  for (int64_t n = n0; n < n1; ++n) row_tile<MR>(w, a, m0, n, y, ys, acc);
}

}  // namespace

NINFER_AVX2 void nvfp4_w4a4_blocked_avx2(const Nvfp4Weight& w, const Nvfp4A4Rows& a, int64_t m0, int rows, int64_t n0,
                                         int64_t n1, float* y, int64_t ys, bool acc) {
  switch (rows) {
    case 1: nvfp4_w4a4_avx2_4x1(w, a, m0, 1, n0, n1, y, ys, acc); break;  // decode-bound GEMV: the 4 x 1 kernel
    case 2: sweep<2>(w, a, m0, n0, n1, y, ys, acc); break;
    case 3: sweep<3>(w, a, m0, n0, n1, y, ys, acc); break;
    default: sweep<4>(w, a, m0, n0, n1, y, ys, acc); break;
  }
}

#else

void nvfp4_w4a4_blocked_avx2(const Nvfp4Weight&, const Nvfp4A4Rows&, int64_t, int, int64_t, int64_t, float*, int64_t,
                             bool) {
  fail(ErrorKind::kUnsupported, "nvfp4: the AVX2 W4A4 kernel is not in this build");
}

#endif

}  // namespace ninfer::cpu
