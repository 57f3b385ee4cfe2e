// AVX-512 variants of the dense GEMM kernels (f32, bf16 and f16 weights against f32 activations), gemm_nn, exp_shift
// and silu_mul: the AVX2 table with those replaced by 16-lane kernels, twice the FMA width on a CPU with two 512-bit
// FMA units (gemm_nn, exp_shift and silu_mul give the AVX2 kernels' bits). Every function carries a target attribute and runs only after the runtime CPU check in
// avx512_kernels().
//
// Summation order (the table's contract, as the AVX2 one's with 16 lanes instead of 8): every output y[m][n] is one
// 16-lane accumulator stepping k by 16 over [0, K16) (K16 = K rounded down to 16), reduced by hsum16, then the last
// K − K16 products added one by one in k order with fma. The one-row kernel and every register tile sum this way, so a
// row gets the same bits alone (decode) and inside any block (speculative verification, batches).
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge operand of their masked builtins and then
// warn about it wherever they are inlined (avx512fintrin.h); nothing in this file reads such a value.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/backend/cpu/exp_poly.h"
#include "engine/backend/cpu/kernels.h"
#include "engine/backend/cpu/simd_avx2.h"
#include "engine/core/error.h"
#include "engine/core/half.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NINFER_HAVE_AVX512_VARIANT 1
#include <immintrin.h>
#endif

namespace ninfer::cpu {

#if NINFER_HAVE_AVX512_VARIANT

#define NINFER_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))

namespace {

struct WF32 {
  using T = float;
  NINFER_AVX512 static inline __m512 load16(const T* p) { return _mm512_loadu_ps(p); }
  static inline float get(const T* p) { return *p; }
};
struct WBf16 {
  using T = uint16_t;
  NINFER_AVX512 static inline __m512 load16(const T* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static inline float get(const T* p) { return bf16_to_f32(*p); }
};
struct WF16 {
  using T = uint16_t;
  NINFER_AVX512 static inline __m512 load16(const T* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static inline float get(const T* p) { return f16_to_f32(*p); }
};

// The fixed reduction of a 16-lane accumulator: halves added, then quarters, pairs, and the last two lanes.
NINFER_AVX512 inline float hsum16(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The tail of one output (k in [K16, K)) after its accumulator's sum.
template <typename W>
inline float finish(float s, const float* x, const typename W::T* w, int64_t K16, int64_t K) {
  for (int64_t k = K16; k < K; ++k) s = std::fma(x[k], W::get(w + k), s);
  return s;
}

// M activation rows (the whole row block, up to kGemmMaxRows) × NR weight rows over k in [k0, k1) (multiples of 16),
// M·NR accumulators in registers, carried between k ranges in `acc16` (M·NR vectors of 16 floats: each accumulator
// goes on with its own k sequence, so the sum is the one an unbroken loop over k gives). k0 == 0 starts from zero;
// `last` reduces each accumulator, adds the tail k ≥ K16 and writes the output.
// xp: the block packed in 16-column panels, element (m, k) for k < K16 at xp[k · M + m · 16 + k % 16].
// Not inlined: inlined into block() beside its one-row twin, GCC 12 ran out of registers and spilled the weights.
template <typename W, int M, int NR>
__attribute__((noinline)) NINFER_AVX512 void tile(const float* xp, const float* x, int64_t xs, const typename W::T* w,
                                                  int64_t ws, int64_t n, int64_t k0, int64_t k1, int64_t K,
                                                  float* acc16, bool last, float* y, int64_t ys, bool acc) {
  __m512 a[M][NR];
#pragma GCC unroll 8
  for (int m = 0; m < M; ++m)
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) a[m][r] = k0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(acc16 + (m * NR + r) * 16);
  const typename W::T* wr[NR];
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r) wr[r] = w + (n + r) * ws;
  constexpr int64_t kLine = 64 / sizeof(typename W::T);  // weights per cache line
  for (int64_t k = k0; k < k1; k += 16) {
    if (k % kLine == 0)  // the same line of the next tile's rows, into L2 (past the matrix's end: harmless)
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) _mm_prefetch(reinterpret_cast<const char*>(wr[r] + NR * ws + k), _MM_HINT_T1);
    __m512 wv[NR];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) wv[r] = W::load16(wr[r] + k);
    const float* xk = xp + k * M;
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m) {
      __m512 xv = _mm512_loadu_ps(xk + m * 16);
      asm("" : "+v"(xv));  // one load per row into a register: GCC 12 otherwise folds it into each of the NR FMAs
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) a[m][r] = _mm512_fmadd_ps(xv, wv[r], a[m][r]);
    }
  }
  if (!last) {
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m)
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) _mm512_store_ps(acc16 + (m * NR + r) * 16, a[m][r]);
    return;
  }
  const int64_t K16 = K / 16 * 16;
  for (int m = 0; m < M; ++m)
    for (int r = 0; r < NR; ++r) {
      const float s = finish<W>(hsum16(a[m][r]), x + m * xs, wr[r], K16, K);
      float& out = y[m * ys + n + r];
      out = acc ? out + s : s;
    }
}

// One activation row against weight rows four at a time, each output summed as the tiles sum it. A cache line of each
// of the four rows per step with a software prefetch into L2 8 KiB ahead in each row, as the AVX2 one-row kernel.
template <typename W>
NINFER_AVX512 void row1(const float* x, const typename W::T* w, int64_t ws, int64_t n0, int64_t n1, int64_t K,
                        float* y, bool acc) {
  constexpr int kR = 4;
  constexpr int64_t kLine = 64 / sizeof(typename W::T), kAhead = 8192 / sizeof(typename W::T);
  const int64_t K16 = K / 16 * 16, K32 = K / 32 * 32;
  int64_t n = n0;
  for (; n + kR <= n1; n += kR) {
    const typename W::T* wr[kR];
    __m512 a[kR];
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r) wr[r] = w + (n + r) * ws, a[r] = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k < K32; k += 32) {
#pragma GCC unroll 4
      for (int r = 0; r < kR; ++r)
        for (int64_t l = 0; l < 32; l += kLine)  // (past the matrix's end is harmless: prefetches never fault)
          _mm_prefetch(reinterpret_cast<const char*>(wr[r] + k + l + kAhead), _MM_HINT_T1);
#pragma GCC unroll 2
      for (int64_t j = 0; j < 32; j += 16) {
        const __m512 xv = _mm512_loadu_ps(x + k + j);
#pragma GCC unroll 4
        for (int r = 0; r < kR; ++r) a[r] = _mm512_fmadd_ps(xv, W::load16(wr[r] + k + j), a[r]);
      }
    }
    for (; k < K16; k += 16) {
      const __m512 xv = _mm512_loadu_ps(x + k);
#pragma GCC unroll 4
      for (int r = 0; r < kR; ++r) a[r] = _mm512_fmadd_ps(xv, W::load16(wr[r] + k), a[r]);
    }
    for (int r = 0; r < kR; ++r) {
      const float s = finish<W>(hsum16(a[r]), x, wr[r], K16, K);
      y[n + r] = acc ? y[n + r] + s : s;
    }
  }
  // The last rows one by one through the 1 × 1 register tile (one row packed is the row itself), in the same order.
  for (; n < n1; ++n) tile<W, 1, 1>(x, x, 0, w, ws, n, 0, K16, K, nullptr, true, y, 0, acc);
}

// The block's rows against weight rows [n0, n1): pieces of kNPiece weight rows, each swept by k ranges of kKc so that
// the block's packed rows of one range (16 KiB) stay in L1 while the piece's tiles pass over them; the weights stream
// once per block. Without the k ranges a block of 8 packed rows (64 KiB at K = 2048) left L1, and each step read its
// 512 bytes of rows from L2 (the 8 × 3 tile ran no faster than AVX2's 4 × 3 then).
template <typename W, int M, int NR>
NINFER_AVX512 void block(const float* xp, const float* x, int64_t xs, const typename W::T* w, int64_t ws, int64_t n0,
                         int64_t n1, int64_t K, float* y, int64_t ys, bool acc) {
  constexpr int64_t kKc = 4096 / M / 16 * 16, kNPiece = NR * 8;  // the rows' k range: 16 KiB of packed floats
  const int64_t K16 = K / 16 * 16;
  alignas(64) float acc16[kNPiece * M * 16];  // the piece's accumulators between k ranges (≤ 12 KiB)
  for (int64_t n = n0; n < n1; n += kNPiece) {
    const int64_t ne = std::min(n1, n + kNPiece);
    int64_t k0 = 0;
    do {
      const int64_t k1 = std::min(K16, k0 + kKc);
      const bool last = k1 == K16;
      int64_t t = n;
      float* a = acc16;
      for (; t + NR <= ne; t += NR, a += M * NR * 16)
        tile<W, M, NR>(xp, x, xs, w, ws, t, k0, k1, K, a, last, y, ys, acc);
      for (; t < ne; ++t, a += M * 16) tile<W, M, 1>(xp, x, xs, w, ws, t, k0, k1, K, a, last, y, ys, acc);
      k0 = k1;
    } while (k0 < K16);
  }
}

// A block of up to kGemmMaxRows rows: element (m, k) for k < K16 at dst[k · rows + m · 16 + k % 16].
NINFER_AVX512 void pack_block(const float* x, int64_t xs, int rows, int64_t K16, float* dst) {
  for (int64_t k = 0; k < K16; k += 16)
    for (int m = 0; m < rows; ++m) _mm512_storeu_ps(dst + k * rows + m * 16, _mm512_loadu_ps(x + m * xs + k));
}

NINFER_AVX512 void gemm_pack_avx512(const float* x, int64_t xs, int64_t M, int64_t K, float* out) {
  for (int64_t m0 = 0; m0 < M; m0 += kGemmMaxRows)
    pack_block(x + m0 * xs, xs, static_cast<int>(std::min<int64_t>(kGemmMaxRows, M - m0)), K / 16 * 16,
               out + m0 / kGemmMaxRows * gemm_pack_block(K));
}

// The whole row block is one register tile, so each weight is loaded and widened once per block; the tile's weight
// rows NR shrink as its activation rows grow (M·NR accumulators + NR weights + 1 row within the 32 registers).
template <typename W>
NINFER_AVX512 void gemm_avx512(const float* x, int64_t xs, int rows, const float* packed, const void* wv, int64_t ws,
                               int64_t n0, int64_t n1, int64_t K, float* y, int64_t ys, bool acc) {
  if (rows < 1 || rows > kGemmMaxRows)
    fail(ErrorKind::kInternal, "gemm kernel called with {} rows (max {})", rows, kGemmMaxRows);
  const auto* w = static_cast<const typename W::T*>(wv);
  if (rows == 1) {
    row1<W>(x, w, ws, n0, n1, K, y, acc);
    return;
  }
  if (!packed) {  // a caller without gemm_pack's rows: pack this block here
    thread_local std::vector<float> own;
    own.resize(static_cast<size_t>(K / 16 * 16 * rows));
    pack_block(x, xs, rows, K / 16 * 16, own.data());
    packed = own.data();
  }
  switch (rows) {
    case 2: block<W, 2, 4>(packed, x, xs, w, ws, n0, n1, K, y, ys, acc); break;
    case 3: block<W, 3, 4>(packed, x, xs, w, ws, n0, n1, K, y, ys, acc); break;
    case 4: block<W, 4, 5>(packed, x, xs, w, ws, n0, n1, K, y, ys, acc); break;
    case 5: block<W, 5, 4>(packed, x, xs, w, ws, n0, n1, K, y, ys, acc); break;
    case 6: block<W, 6, 4>(packed, x, xs, w, ws, n0, n1, K, y, ys, acc); break;
    case 7: block<W, 7, 3>(packed, x, xs, w, ws, n0, n1, K, y, ys, acc); break;
    default: block<W, 8, 3>(packed, x, xs, w, ws, n0, n1, K, y, ys, acc); break;
  }
}

// ---- gemm_nn: C = A·B for the small in-cache products (chunked delta rule, attention's scores and P·V) ----
// Each output is one FMA chain over k in order, in one lane, as in the AVX2 kernel: the lanes are columns, so the
// width of a vector changes which columns run together, never an output's bits. A tile of MR rows × 16·NV columns:
// per k, NV vectors of B's row k against a broadcast of a[m][k] per row (12 × 2 is 24 of the 32 zmm registers).
template <int MR, int NV>
NINFER_AVX512 void gemm_nn_tile(const float* a, int64_t as, const float* b, int64_t bs, float* c, int64_t cs, int64_t K,
                                bool acc) {
  __m512 t[MR][NV];
#pragma GCC unroll 12
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) t[m][v] = acc ? _mm512_loadu_ps(c + m * cs + 16 * v) : _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    __m512 bv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_ps(b + k * bs + 16 * v);
#pragma GCC unroll 12
    for (int m = 0; m < MR; ++m) {
      const __m512 av = _mm512_set1_ps(a[m * as + k]);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) t[m][v] = _mm512_fmadd_ps(av, bv[v], t[m][v]);
    }
  }
#pragma GCC unroll 12
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(c + m * cs + 16 * v, t[m][v]);
}

// The last N % 16 columns: 8 lanes at a time, then one by one, each output's k order as the tiles'.
template <int MR>
NINFER_AVX512 void gemm_nn_tail(const float* a, int64_t as, const float* b, int64_t bs, float* c, int64_t cs, int64_t n,
                                int64_t N, int64_t K, bool acc) {
  for (; n + 8 <= N; n += 8) {
    __m256 t[MR];
#pragma GCC unroll 12
    for (int m = 0; m < MR; ++m) t[m] = acc ? _mm256_loadu_ps(c + m * cs + n) : _mm256_setzero_ps();
    for (int64_t k = 0; k < K; ++k) {
      const __m256 bv = _mm256_loadu_ps(b + k * bs + n);
#pragma GCC unroll 12
      for (int m = 0; m < MR; ++m) t[m] = _mm256_fmadd_ps(_mm256_set1_ps(a[m * as + k]), bv, t[m]);
    }
#pragma GCC unroll 12
    for (int m = 0; m < MR; ++m) _mm256_storeu_ps(c + m * cs + n, t[m]);
  }
  for (; n < N; ++n)
    for (int m = 0; m < MR; ++m) {
      float s = acc ? c[m * cs + n] : 0.0f;
      for (int64_t k = 0; k < K; ++k) s = std::fma(a[m * as + k], b[k * bs + n], s);
      c[m * cs + n] = s;
    }
}

template <int MR>
NINFER_AVX512 void gemm_nn_rows(const float* a, int64_t as, const float* b, int64_t bs, float* c, int64_t cs, int64_t N,
                                int64_t K, bool acc) {
  int64_t n = 0;
  for (; n + 32 <= N; n += 32) gemm_nn_tile<MR, 2>(a, as, b + n, bs, c + n, cs, K, acc);
  for (; n + 16 <= N; n += 16) gemm_nn_tile<MR, 1>(a, as, b + n, bs, c + n, cs, K, acc);
  gemm_nn_tail<MR>(a, as, b, bs, c, cs, n, N, K, acc);
}

NINFER_AVX512 void gemm_nn_avx512(const float* a, int64_t as, const float* b, int64_t bs, float* c, int64_t cs,
                                  int64_t M, int64_t N, int64_t K, bool acc) {
  int64_t m = 0;
  for (; m + 12 <= M; m += 12) gemm_nn_rows<12>(a + m * as, as, b, bs, c + m * cs, cs, N, K, acc);
  if (m + 6 <= M) gemm_nn_rows<6>(a + m * as, as, b, bs, c + m * cs, cs, N, K, acc), m += 6;
  switch (M - m) {
    case 5: gemm_nn_rows<5>(a + m * as, as, b, bs, c + m * cs, cs, N, K, acc); break;
    case 4: gemm_nn_rows<4>(a + m * as, as, b, bs, c + m * cs, cs, N, K, acc); break;
    case 3: gemm_nn_rows<3>(a + m * as, as, b, bs, c + m * cs, cs, N, K, acc); break;
    case 2: gemm_nn_rows<2>(a + m * as, as, b, bs, c + m * cs, cs, N, K, acc); break;
    case 1: gemm_nn_rows<1>(a + m * as, as, b, bs, c + m * cs, cs, N, K, acc); break;
    default: break;
  }
}

// ---- exp_shift and silu_mul: the AVX2 kernels' exp polynomial on 16 lanes ----
// exp(x) for x ≤ 0, each lane by exactly the AVX2 kernel's operations (kernels_avx2.cpp, exp_nonpositive): the same
// reduction, polynomial and exponent bits, so the same value; 16 lanes per instruction instead of 8.
NINFER_AVX512 inline __m512 exp_nonpositive16(__m512 x) {
  using namespace exp_poly;
  const __m512 lo = _mm512_set1_ps(kUnderflow);
  const __mmask16 underflow = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  x = _mm512_max_ps(lo, x);  // (max returns its second operand when one is NaN: a NaN stays NaN)
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(kLn2Lo), r);
  __m512 y = _mm512_set1_ps(kCoeffs[0]);
#pragma GCC unroll 8
  for (int i = 1; i < 8; ++i) y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(kCoeffs[i]));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(k), _mm512_set1_epi32(127)), 23);
  y = _mm512_mul_ps(y, _mm512_castsi512_ps(e));
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~underflow), y);
}

// p = exp(x − m) as the AVX2 kernel computes it, and Σ p in its order: one 8-lane sum taking each group of 8 in turn
// (a 16-lane block adds its low half, then its high half), the last n % 8 one by one with std::exp.
NINFER_AVX512 float exp_shift_avx512(const float* x, float m, float* p, int64_t n) {
  const __m512 mv = _mm512_set1_ps(m);
  __m256 l = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 e = exp_nonpositive16(_mm512_sub_ps(_mm512_loadu_ps(x + i), mv));
    _mm512_storeu_ps(p + i, e);
    l = _mm256_add_ps(l, _mm512_castps512_ps256(e));
    l = _mm256_add_ps(l, _mm512_extractf32x8_ps(e, 1));
  }
  if (i + 8 <= n) {  // one group of 8 left: the low half of a masked 16-lane step
    const __m512 e = exp_nonpositive16(_mm512_sub_ps(_mm512_maskz_loadu_ps(0x00ff, x + i), mv));
    _mm256_storeu_ps(p + i, _mm512_castps512_ps256(e));
    l = _mm256_add_ps(l, _mm512_castps512_ps256(e));
    i += 8;
  }
  float s = simd::hsum(l);  // the AVX2 kernel's reduction of its 8 lanes
  for (; i < n; ++i) s += (p[i] = std::exp(x[i] - m));
  return s;
}

// silu(x) · u as the AVX2 kernel computes it, 16 lanes at a time: x / (1 + e) for x ≥ 0 and x · e / (1 + e) for a set
// sign bit, e = exp(−|x|); the last n % 16 with the scalar formula where AVX2 would (n % 8) and 8 masked lanes before.
NINFER_AVX512 inline __m512 silu16(__m512 x) {
  const __m512 e = exp_nonpositive16(_mm512_or_ps(x, _mm512_set1_ps(-0.0f)));  // exp(−|x|)
  const __mmask16 negative = _mm512_movepi32_mask(_mm512_castps_si512(x));
  const __m512 num = _mm512_mask_mul_ps(x, negative, x, e);
  return _mm512_div_ps(num, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

NINFER_AVX512 void silu_mul_avx512(const float* g, const float* u, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 s = silu16(_mm512_loadu_ps(g + i));
    if (u) s = _mm512_mul_ps(s, _mm512_loadu_ps(u + i));
    _mm512_storeu_ps(y + i, s);
  }
  if (i + 8 <= n) {
    __m512 s = silu16(_mm512_maskz_loadu_ps(0x00ff, g + i));
    if (u) s = _mm512_mul_ps(s, _mm512_maskz_loadu_ps(0x00ff, u + i));
    _mm512_mask_storeu_ps(y + i, 0x00ff, s);
    i += 8;
  }
  for (; i < n; ++i) {
    const float s = g[i] / (1.0f + std::exp(-g[i]));
    y[i] = u ? s * u[i] : s;
  }
}

}  // namespace

const Kernels* avx512_kernels() {
  static const Kernels* table = []() -> const Kernels* {
    const Kernels* avx2 = avx2_kernels();
    if (!avx2 || !cpu_supports_avx512_vnni()) return nullptr;
    static Kernels k = *avx2;
    k.name = "avx512";
    k.gemm_f32 = gemm_avx512<WF32>;
    k.gemm_bf16 = gemm_avx512<WBf16>;
    k.gemm_f16 = gemm_avx512<WF16>;
    k.gemm_pack = gemm_pack_avx512;
    k.gemm_nn = gemm_nn_avx512;
    k.exp_shift = exp_shift_avx512;
    k.silu_mul = silu_mul_avx512;
    return &k;
  }();
  return table;
}

#else  // not x86-64 with GCC or Clang

const Kernels* avx512_kernels() { return nullptr; }

#endif

}  // namespace ninfer::cpu
