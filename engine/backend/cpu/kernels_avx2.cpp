// AVX2 + FMA + F16C variants of the CPU kernels. Compiled for plain x86-64: every function carries a target
// attribute and is only called after a runtime CPU check (cpu_supports_avx2_fma_f16c).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/backend/cpu/exp_poly.h"
#include "engine/backend/cpu/kernels.h"
#include "engine/core/error.h"
#include "engine/core/half.h"

#if defined(__x86_64__) || defined(_M_X64)
#define NINFER_HAVE_AVX2_VARIANT 1
#include "engine/backend/cpu/simd_avx2.h"
#endif

namespace ninfer::cpu {

#if NINFER_HAVE_AVX2_VARIANT

#if defined(__GNUC__) || defined(__clang__)
#define NINFER_AVX2 __attribute__((target("avx2,fma,f16c")))
#else
#define NINFER_AVX2
#endif

namespace {

struct WF32 {
  using T = float;
  NINFER_AVX2 static inline __m256 load8(const T* p) { return _mm256_loadu_ps(p); }
  static inline float get(const T* p) { return *p; }
};
struct WBf16 {
  using T = uint16_t;
  NINFER_AVX2 static inline __m256 load8(const T* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static inline float get(const T* p) { return bf16_to_f32(*p); }
};
struct WF16 {
  using T = uint16_t;
  NINFER_AVX2 static inline __m256 load8(const T* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static inline float get(const T* p) { return f16_to_f32(*p); }
};

using simd::hsum;

// M activation rows x NR weight rows per inner step; M * NR accumulators live in registers.
// xp is the activation block packed in 8-column panels: element (m, k) for k < K8 at xp[k * M + m * 8 + k % 8]
// (one sequential stream; rows K floats apart would alias in L1 for power-of-two K). Columns >= K8 come from x.
template <typename W, int M, int NR>
NINFER_AVX2 void gemm_block(const float* xp, const float* x, int64_t xs, const typename W::T* w, int64_t ws, int64_t n,
                            int64_t K, float* y, int64_t ys, bool acc) {
  __m256 a[M][NR];
  for (int m = 0; m < M; ++m)
    for (int r = 0; r < NR; ++r) a[m][r] = _mm256_setzero_ps();
  const typename W::T* wr[NR];
  for (int r = 0; r < NR; ++r) wr[r] = w + (n + r) * ws;
  const int64_t K8 = K / 8 * 8;
  constexpr int64_t kLine = 64 / sizeof(typename W::T);     // weights per cache line
  for (int64_t k = 0; k < K8; k += 8) {
    if (k % kLine == 0)  // the same line of the next block's rows, into L2 (past the matrix's end: harmless)
      for (int r = 0; r < NR; ++r) _mm_prefetch(reinterpret_cast<const char*>(wr[r] + NR * ws + k), _MM_HINT_T1);
    __m256 wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = W::load8(wr[r] + k);
    const float* xk = xp + k * M;
    for (int m = 0; m < M; ++m) {
      const __m256 xv = _mm256_loadu_ps(xk + m * 8);
      for (int r = 0; r < NR; ++r) a[m][r] = _mm256_fmadd_ps(xv, wv[r], a[m][r]);
    }
  }
  for (int m = 0; m < M; ++m) {
    for (int r = 0; r < NR; ++r) {
      float s = hsum(a[m][r]);
      for (int64_t kk = K8; kk < K; ++kk) s += x[m * xs + kk] * W::get(wr[r] + kk);
      float& out = y[m * ys + n + r];
      out = acc ? out + s : s;
    }
  }
}

// One activation row against weight rows four at a time, each output summed exactly as gemm_block sums it (one
// 8-lane accumulator stepping k by 8, hsum, the tail in k order), so a row has the same bits here as in any tile.
// The loop takes a cache line of each of the four rows per step (32 k of bf16/f16) with a software prefetch into L2
// 8 KiB ahead in each row, as the one-row loop before it did (which read ~21 GB/s over a 311 MB bf16 matrix with the
// hardware prefetcher alone, ~37 GB/s with this prefetch): on the lm_head, 2 threads, this loop read a median of
// 32.6 GB/s against that loop's 30.6 in one interleaved run (docs/benchmarks.md).
template <typename W>
NINFER_AVX2 void gemm_row1(const float* x, const typename W::T* w, int64_t ws, int64_t n0, int64_t n1, int64_t K,
                           float* y, bool acc) {
  constexpr int kR = 4;
  constexpr int64_t kLine = 64 / sizeof(typename W::T), kAhead = 8192 / sizeof(typename W::T);
  const int64_t K8 = K / 8 * 8, K32 = K / 32 * 32;
  int64_t n = n0;
  for (; n + kR <= n1; n += kR) {
    const typename W::T* wr[kR];
    __m256 a[kR];
    for (int r = 0; r < kR; ++r) wr[r] = w + (n + r) * ws, a[r] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k < K32; k += 32) {
      for (int r = 0; r < kR; ++r)
        for (int64_t l = 0; l < 32; l += kLine)  // (past the matrix's end is harmless: prefetches never fault)
          _mm_prefetch(reinterpret_cast<const char*>(wr[r] + k + l + kAhead), _MM_HINT_T1);
      for (int64_t j = 0; j < 32; j += 8) {
        const __m256 xv = _mm256_loadu_ps(x + k + j);
        for (int r = 0; r < kR; ++r) a[r] = _mm256_fmadd_ps(xv, W::load8(wr[r] + k + j), a[r]);
      }
    }
    for (; k < K8; k += 8) {
      const __m256 xv = _mm256_loadu_ps(x + k);
      for (int r = 0; r < kR; ++r) a[r] = _mm256_fmadd_ps(xv, W::load8(wr[r] + k), a[r]);
    }
    for (int r = 0; r < kR; ++r) {
      float s = hsum(a[r]);
      for (int64_t kk = K8; kk < K; ++kk) s += x[kk] * W::get(wr[r] + kk);
      y[n + r] = acc ? y[n + r] + s : s;
    }
  }
  for (; n < n1; ++n) gemm_block<W, 1, 1>(x, x, 0, w, ws, n, K, y, 0, acc);
}

template <typename W, int M, int NR>
NINFER_AVX2 void gemm_rows(const float* xp, const float* x, int64_t xs, const typename W::T* w, int64_t ws, int64_t n0,
                           int64_t n1, int64_t K, float* y, int64_t ys, bool acc) {
  int64_t n = n0;
  for (; n + NR <= n1; n += NR) gemm_block<W, M, NR>(xp, x, xs, w, ws, n, K, y, ys, acc);
  for (; n < n1; ++n) gemm_block<W, M, 1>(xp, x, xs, w, ws, n, K, y, ys, acc);
}

constexpr int kMr = 4;  // activation rows per register tile (sub-block)

// One block of up to kGemmMaxRows rows in sub-blocks of kMr: sub-block sb at dst + sb · K8 · kMr, its element
// (m, k) for k < K8 at k · mr + m · 8 + k % 8 (mr: the sub-block's rows).
void pack_block(const float* x, int64_t xs, int rows, int64_t K8, float* dst) {
  for (int m0 = 0; m0 < rows; m0 += kMr) {
    const int mr = std::min(kMr, rows - m0);
    float* d = dst + m0 * K8;
    for (int64_t k = 0; k < K8; k += 8)
      for (int m = 0; m < mr; ++m) std::memcpy(d + k * mr + m * 8, x + (m0 + m) * xs + k, 8 * sizeof(float));
  }
}

void gemm_pack_avx2(const float* x, int64_t xs, int64_t M, int64_t K, float* out) {
  for (int64_t m0 = 0; m0 < M; m0 += kGemmMaxRows)
    pack_block(x + m0 * xs, xs, static_cast<int>(std::min<int64_t>(kGemmMaxRows, M - m0)), K / 8 * 8,
               out + m0 / kGemmMaxRows * gemm_pack_block(K));
}

// Activation rows are processed in sub-blocks of up to 4 (register tile 4 x 3 weight rows); weight rows in pieces of
// 12 so a piece stays in L1/L2 while every sub-block passes over it (the weights are read from memory once).
template <typename W>
NINFER_AVX2 void gemm_avx2(const float* x, int64_t xs, int rows, const float* packed, const void* wv, int64_t ws,
                           int64_t n0, int64_t n1, int64_t K, float* y, int64_t ys, bool acc) {
  if (rows < 1 || rows > kGemmMaxRows)
    fail(ErrorKind::kInternal, "gemm kernel called with {} rows (max {})", rows, kGemmMaxRows);
  const auto* w = static_cast<const typename W::T*>(wv);
  if (rows == 1) {
    gemm_row1<W>(x, w, ws, n0, n1, K, y, acc);
    return;
  }
  const int64_t K8 = K / 8 * 8;
  constexpr int64_t kNPiece = 12;
  const int nsub = (rows + kMr - 1) / kMr;
  if (!packed) {  // a caller without gemm_pack's rows: pack this block here
    thread_local std::vector<float> own;
    own.resize(static_cast<size_t>(K8 * kMr * nsub));
    pack_block(x, xs, rows, K8, own.data());
    packed = own.data();
  }
  const float* xp[2] = {packed, packed + K8 * kMr};
  for (int64_t n = n0; n < n1; n += kNPiece) {
    const int64_t ne = std::min(n1, n + kNPiece);
    for (int sb = 0; sb < nsub; ++sb) {
      const int m0 = sb * kMr, mr = std::min(kMr, rows - m0);
      const float* xs0 = x + m0 * xs;
      float* y0 = y + m0 * ys;
      switch (mr) {
        case 1: gemm_rows<W, 1, 4>(xp[sb], xs0, xs, w, ws, n, ne, K, y0, ys, acc); break;
        case 2: gemm_rows<W, 2, 4>(xp[sb], xs0, xs, w, ws, n, ne, K, y0, ys, acc); break;
        case 3: gemm_rows<W, 3, 3>(xp[sb], xs0, xs, w, ws, n, ne, K, y0, ys, acc); break;
        default: gemm_rows<W, 4, 3>(xp[sb], xs0, xs, w, ws, n, ne, K, y0, ys, acc); break;
      }
    }
  }
}

// C tile of MR rows x 8·NV columns (NV = 1 or 2 vectors) for gemm_nn: per k one broadcast of a[m][k] against
// NV vectors of B's row k, MR·NV accumulators (6 x 16 is 12 of the 16 ymm registers).
template <int MR, int NV>
NINFER_AVX2 void gemm_nn_tile(const float* a, int64_t as, const float* b, int64_t bs, float* c, int64_t cs, int64_t K,
                              bool acc) {
  // The loops over the tile are unrolled by pragma: left to GCC 12 the 6 x 2 tile's accumulators lived on the stack,
  // stored and reloaded at every k (perf annotate of attention's P·V).
  __m256 t[MR][NV];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) t[m][v] = acc ? _mm256_loadu_ps(c + m * cs + 8 * v) : _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    __m256 bv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) bv[v] = _mm256_loadu_ps(b + k * bs + 8 * v);
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m256 av = _mm256_broadcast_ss(a + m * as + k);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) t[m][v] = _mm256_fmadd_ps(av, bv[v], t[m][v]);
    }
  }
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) _mm256_storeu_ps(c + m * cs + 8 * v, t[m][v]);
}

template <int MR>
NINFER_AVX2 void gemm_nn_rows(const float* a, int64_t as, const float* b, int64_t bs, float* c, int64_t cs, int64_t N,
                              int64_t K, bool acc) {
  int64_t n = 0;
  for (; n + 16 <= N; n += 16) gemm_nn_tile<MR, 2>(a, as, b + n, bs, c + n, cs, K, acc);
  for (; n + 8 <= N; n += 8) gemm_nn_tile<MR, 1>(a, as, b + n, bs, c + n, cs, K, acc);
  for (; n < N; ++n)  // the last N % 8 columns, k order as the tiles
    for (int m = 0; m < MR; ++m) {
      float s = acc ? c[m * cs + n] : 0.0f;
      for (int64_t k = 0; k < K; ++k) s = std::fma(a[m * as + k], b[k * bs + n], s);
      c[m * cs + n] = s;
    }
}

NINFER_AVX2 void gemm_nn_avx2(const float* a, int64_t as, const float* b, int64_t bs, float* c, int64_t cs, int64_t M,
                              int64_t N, int64_t K, bool acc) {
  int64_t m = 0;
  for (; m + 6 <= M; m += 6) gemm_nn_rows<6>(a + m * as, as, b, bs, c + m * cs, cs, N, K, acc);
  switch (M - m) {
    case 5: gemm_nn_rows<5>(a + m * as, as, b, bs, c + m * cs, cs, N, K, acc); break;
    case 4: gemm_nn_rows<4>(a + m * as, as, b, bs, c + m * cs, cs, N, K, acc); break;
    case 3: gemm_nn_rows<3>(a + m * as, as, b, bs, c + m * cs, cs, N, K, acc); break;
    case 2: gemm_nn_rows<2>(a + m * as, as, b, bs, c + m * cs, cs, N, K, acc); break;
    case 1: gemm_nn_rows<1>(a + m * as, as, b, bs, c + m * cs, cs, N, K, acc); break;
    default: break;
  }
}

// exp(x) for x ≤ 0 (below −87.3 it flushes to 0): x = k·ln2 + r with |r| ≤ ln2/2 (ln2 split in two for an exact
// reduction), exp(r) by its degree-7 Taylor polynomial (truncation < 1e-8 relative on [−ln2/2, ln2/2]), times 2^k
// built in the exponent bits.
NINFER_AVX2 inline __m256 exp_nonpositive(__m256 x) {
  using namespace exp_poly;
  const __m256 lo = _mm256_set1_ps(kUnderflow);
  const __m256 underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  x = _mm256_max_ps(lo, x);  // (max returns its second operand when one is NaN: a NaN stays NaN)
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(kLn2Lo), r);
  __m256 y = _mm256_set1_ps(kCoeffs[0]);
#pragma GCC unroll 8
  for (int i = 1; i < 8; ++i) y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(kCoeffs[i]));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  y = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
  return _mm256_andnot_ps(underflow, y);
}

// silu(x) = x / (1 + e) for x ≥ 0 and x · e / (1 + e) for x < 0, e = exp(−|x|) ≤ 1 (no overflow either way).
NINFER_AVX2 void silu_mul_avx2(const float* g, const float* u, float* y, int64_t n) {
  const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(g + i);
    const __m256 e = exp_nonpositive(_mm256_or_ps(x, sign));  // exp(−|x|)
    const __m256 num = _mm256_blendv_ps(x, _mm256_mul_ps(x, e), x);  // x < 0 (sign bit set): x · e
    __m256 s = _mm256_div_ps(num, _mm256_add_ps(one, e));
    if (u) s = _mm256_mul_ps(s, _mm256_loadu_ps(u + i));
    _mm256_storeu_ps(y + i, s);
  }
  for (; i < n; ++i) {
    const float s = g[i] / (1.0f + std::exp(-g[i]));
    y[i] = u ? s * u[i] : s;
  }
}

NINFER_AVX2 float exp_shift_avx2(const float* x, float m, float* p, int64_t n) {
  const __m256 mv = _mm256_set1_ps(m);
  __m256 l = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv));
    _mm256_storeu_ps(p + i, e);
    l = _mm256_add_ps(l, e);
  }
  float s = simd::hsum(l);
  for (; i < n; ++i) s += (p[i] = std::exp(x[i] - m));
  return s;
}

NINFER_AVX2 float dot_avx2(const float* a, const float* b, int64_t n) {
  return simd::dot(a, b, n, simd::load8_f32, simd::scalar_f32);
}

NINFER_AVX2 void axpy_avx2(float a, const float* x, float* y, int64_t n) {
  simd::axpy(a, x, y, n, simd::load8_f32, simd::scalar_f32);
}

NINFER_AVX2 void scale_avx2(float a, float* y, int64_t n) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(av, _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] *= a;
}

// Pass 1 of delta_step over columns [j0, j0 + 8·V): sk = Sᵀk and sq = Sᵀq, V vectors of each in registers.
template <int V>
NINFER_AVX2 inline void delta_columns_avx2(const float* S, int64_t dk, int64_t dv, int64_t j0, const float* k,
                                           const float* q, float* sk, float* sq) {
  __m256 ak[V], aq[V];
  for (int b = 0; b < V; ++b) ak[b] = aq[b] = _mm256_setzero_ps();
  for (int64_t i = 0; i < dk; ++i) {
    const __m256 ki = _mm256_set1_ps(k[i]), qi = _mm256_set1_ps(q[i]);
    const float* s = S + i * dv + j0;
    for (int b = 0; b < V; ++b) {
      const __m256 x = _mm256_loadu_ps(s + 8 * b);
      ak[b] = _mm256_fmadd_ps(ki, x, ak[b]);
      aq[b] = _mm256_fmadd_ps(qi, x, aq[b]);
    }
  }
  for (int b = 0; b < V; ++b) _mm256_storeu_ps(sk + j0 + 8 * b, ak[b]), _mm256_storeu_ps(sq + j0 + 8 * b, aq[b]);
}

NINFER_AVX2 void stream_copy_avx2(float* dst, const float* src, int64_t n) {
  if (reinterpret_cast<uintptr_t>(dst) % 32 != 0) {
    std::copy(src, src + n, dst);
    return;
  }
  const int64_t n32 = n / 32 * 32;
  for (int64_t i = 0; i < n32; i += 32) {
    const __m256 a = _mm256_loadu_ps(src + i), b = _mm256_loadu_ps(src + i + 8);
    const __m256 c = _mm256_loadu_ps(src + i + 16), d = _mm256_loadu_ps(src + i + 24);
    _mm256_stream_ps(dst + i, a);
    _mm256_stream_ps(dst + i + 8, b);
    _mm256_stream_ps(dst + i + 16, c);
    _mm256_stream_ps(dst + i + 24, d);
  }
  _mm_sfence();  // the streamed lines are ordered before what follows (another thread may read them next step)
  std::copy(src + n32, src + n, dst + n32);
}

NINFER_AVX2 void delta_step_avx2(float* S, int64_t dk, int64_t dv, const float* k, const float* q, const float* v,
                                 float decay, float beta, float* o, float* tmp) {
  float *sk = tmp, *sq = tmp + dv;
  int64_t j = 0;
  for (; j + 32 <= dv; j += 32) delta_columns_avx2<4>(S, dk, dv, j, k, q, sk, sq);
  for (; j + 8 <= dv; j += 8) delta_columns_avx2<1>(S, dk, dv, j, k, q, sk, sq);
  for (; j < dv; ++j) {
    float a = 0.0f, b = 0.0f;
    for (int64_t i = 0; i < dk; ++i) a += k[i] * S[i * dv + j], b += q[i] * S[i * dv + j];
    sk[j] = a, sq[j] = b;
  }
  const float kq = simd::dot(k, q, dk, simd::load8_f32, simd::scalar_f32);
  for (j = 0; j < dv; ++j) {
    const float u = beta * (v[j] - decay * sk[j]);
    o[j] = decay * sq[j] + kq * u;
    sk[j] = u;
  }
  const __m256 d = _mm256_set1_ps(decay);
  for (int64_t i = 0; i < dk; ++i) {
    float* s = S + i * dv;
    const __m256 ki = _mm256_set1_ps(k[i]);
    for (j = 0; j + 8 <= dv; j += 8)
      _mm256_storeu_ps(s + j, _mm256_fmadd_ps(ki, _mm256_loadu_ps(sk + j), _mm256_mul_ps(d, _mm256_loadu_ps(s + j))));
    for (; j < dv; ++j) s[j] = decay * s[j] + k[i] * sk[j];
  }
}

NINFER_AVX2 void to_f32_avx2(const void* src, DType dtype, float* dst, int64_t n) {
  int64_t i = 0;
  switch (dtype) {
    case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case DType::kBF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, WBf16::load8(s + i));
      for (; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::kF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, WF16::load8(s + i));
      for (; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    default: fail(ErrorKind::kUnsupported, "to_f32: dtype {} is not f32/bf16/f16", dtype_name(dtype));
  }
}

// 8 x 8 tiles: eight rows widened by W::load8, transposed in registers (unpack, shuffle, lane permute), stored as
// eight destination rows; the edges element by element.
template <typename W>
NINFER_AVX2 void transpose_to_f32_t(const typename W::T* s, int64_t ss, int64_t rows, int64_t cols, float* d,
                                    int64_t ds) {
  const int64_t r8 = rows / 8 * 8, c8 = cols / 8 * 8;
  for (int64_t r = 0; r < r8; r += 8)
    for (int64_t c = 0; c < c8; c += 8) {
      __m256 x[8];
      for (int i = 0; i < 8; ++i) x[i] = W::load8(s + (r + i) * ss + c);
      const __m256 t0 = _mm256_unpacklo_ps(x[0], x[1]), t1 = _mm256_unpackhi_ps(x[0], x[1]);
      const __m256 t2 = _mm256_unpacklo_ps(x[2], x[3]), t3 = _mm256_unpackhi_ps(x[2], x[3]);
      const __m256 t4 = _mm256_unpacklo_ps(x[4], x[5]), t5 = _mm256_unpackhi_ps(x[4], x[5]);
      const __m256 t6 = _mm256_unpacklo_ps(x[6], x[7]), t7 = _mm256_unpackhi_ps(x[6], x[7]);
      const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
      const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
      const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
      const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
      float* o = d + c * ds + r;
      _mm256_storeu_ps(o + 0 * ds, _mm256_permute2f128_ps(u0, u4, 0x20));
      _mm256_storeu_ps(o + 1 * ds, _mm256_permute2f128_ps(u1, u5, 0x20));
      _mm256_storeu_ps(o + 2 * ds, _mm256_permute2f128_ps(u2, u6, 0x20));
      _mm256_storeu_ps(o + 3 * ds, _mm256_permute2f128_ps(u3, u7, 0x20));
      _mm256_storeu_ps(o + 4 * ds, _mm256_permute2f128_ps(u0, u4, 0x31));
      _mm256_storeu_ps(o + 5 * ds, _mm256_permute2f128_ps(u1, u5, 0x31));
      _mm256_storeu_ps(o + 6 * ds, _mm256_permute2f128_ps(u2, u6, 0x31));
      _mm256_storeu_ps(o + 7 * ds, _mm256_permute2f128_ps(u3, u7, 0x31));
    }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = r < r8 ? c8 : 0; c < cols; ++c) d[c * ds + r] = W::get(s + r * ss + c);
}

NINFER_AVX2 void transpose_to_f32_avx2(const void* src, DType dtype, int64_t ss, int64_t rows, int64_t cols, float* dst,
                                       int64_t ds) {
  switch (dtype) {
    case DType::kF32: return transpose_to_f32_t<WF32>(static_cast<const float*>(src), ss, rows, cols, dst, ds);
    case DType::kBF16: return transpose_to_f32_t<WBf16>(static_cast<const uint16_t*>(src), ss, rows, cols, dst, ds);
    case DType::kF16: return transpose_to_f32_t<WF16>(static_cast<const uint16_t*>(src), ss, rows, cols, dst, ds);
    default: fail(ErrorKind::kUnsupported, "transpose_to_f32: dtype {} is not f32/bf16/f16", dtype_name(dtype));
  }
}

NINFER_AVX2 void from_f32_avx2(const float* src, DType dtype, void* dst, int64_t n) {
  int64_t i = 0;
  switch (dtype) {
    case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case DType::kBF16: f32_to_bf16(src, static_cast<uint16_t*>(dst), static_cast<size_t>(n)); return;
    case DType::kF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
      for (; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return;
    }
    default: fail(ErrorKind::kUnsupported, "from_f32: dtype {} is not f32/bf16/f16", dtype_name(dtype));
  }
}

}  // namespace

const Kernels* avx2_kernels() {
  static const bool ok = cpu_supports_avx2_fma_f16c();
  static const Kernels k{"avx2",   gemm_avx2<WF32>, gemm_avx2<WBf16>, gemm_avx2<WF16>, dot_avx2,
                         axpy_avx2, scale_avx2,     to_f32_avx2,      from_f32_avx2,   gemm_nn_avx2,
                         exp_shift_avx2, gemm_pack_avx2, silu_mul_avx2, transpose_to_f32_avx2,
                         delta_step_avx2, stream_copy_avx2};
  return ok ? &k : nullptr;
}

#else  // not x86-64

const Kernels* avx2_kernels() { return nullptr; }

#endif

}  // namespace ninfer::cpu
