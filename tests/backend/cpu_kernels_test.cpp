// The CPU kernel table's small row-major product gemm_nn (the chunked delta rule's and attention's building block):
// every variant against a double-precision reference on odd shapes (column tails of 1..7, rows not a multiple of the
// 6-row tile, strided operands, accumulate or overwrite), and nothing written outside the output block. exp_shift
// (attention's softmax step) against std::exp: values, sum, underflow and NaN. transpose_to_f32 (attention's Kᵀ)
// exactly, on every K dtype, with edges on both sides of the 8 x 8 tile.
// delta_step (the recurrent gated delta rule per token) against the textbook order in double. stream_copy (GDN
// checkpoints) exactly, at aligned and unaligned destinations, and nothing written past the end.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "engine/backend/cpu/kernels.h"
#include "engine/core/half.h"

namespace ninfer::cpu {
namespace {

std::vector<const Kernels*> variants() {
  std::vector<const Kernels*> v{&scalar_kernels()};
  if (const Kernels* k = avx2_kernels()) v.push_back(k);
  if (const Kernels* k = avx512_kernels()) v.push_back(k);
  return v;
}

TEST(CpuKernels, GemmNnMatchesDoubleReference) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> U(-1.0f, 1.0f);
  const int64_t pad = 5;  // extra columns in every stride: must stay untouched in C
  for (const Kernels* kr : variants()) {
    for (int64_t M : {1, 2, 5, 6, 7, 13, 64})
      for (int64_t N : {1, 7, 8, 9, 16, 23, 64, 256})
        for (int64_t K : {1, 3, 16, 64, 128})
          for (bool acc : {false, true}) {
            const int64_t as = K + pad, bs = N + pad, cs = N + pad;
            std::vector<float> a(static_cast<size_t>(M * as)), b(static_cast<size_t>(K * bs)),
                c(static_cast<size_t>(M * cs));
            for (float& x : a) x = U(rng);
            for (float& x : b) x = U(rng);
            for (float& x : c) x = U(rng);
            const std::vector<float> c0 = c;
            kr->gemm_nn(a.data(), as, b.data(), bs, c.data(), cs, M, N, K, acc);
            for (int64_t m = 0; m < M; ++m) {
              for (int64_t n = 0; n < N; ++n) {
                double want = acc ? c0[static_cast<size_t>(m * cs + n)] : 0.0, mag = std::abs(want);
                for (int64_t k = 0; k < K; ++k) {
                  const double p = double(a[static_cast<size_t>(m * as + k)]) * b[static_cast<size_t>(k * bs + n)];
                  want += p;
                  mag += std::abs(p);
                }
                ASSERT_NEAR(c[static_cast<size_t>(m * cs + n)], want, 1e-6 * mag + 1e-7)
                    << kr->name << " M " << M << " N " << N << " K " << K << " acc " << acc << " at " << m << "," << n;
              }
              for (int64_t n = N; n < cs; ++n)
                ASSERT_EQ(c[static_cast<size_t>(m * cs + n)], c0[static_cast<size_t>(m * cs + n)])
                    << kr->name << " wrote past column " << N;
            }
          }
  }
}

// Every output of gemm_nn is one FMA chain over k in order in one lane, so the AVX-512 kernel (12-row tiles, 32- and
// 16-column vectors, then 8 and 1) gives the AVX2 kernel's bits on every shape: column tails of every width, row
// counts around both tiles, accumulate or not.
TEST(CpuKernels, Avx512GemmNnGivesTheAvx2Bits) {
  const Kernels* avx2 = avx2_kernels();
  const Kernels* avx512 = avx512_kernels();
  if (avx2 == nullptr || avx512 == nullptr) GTEST_SKIP() << "this CPU has no AVX-512 (or no AVX2): nothing to compare";
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> U(-1.0f, 1.0f);
  for (int64_t M : {1, 5, 6, 11, 12, 13, 18, 25, 64})
    for (int64_t N : {1, 7, 8, 15, 16, 17, 24, 31, 32, 33, 40, 64, 100})
      for (int64_t K : {1, 7, 64, 129})
        for (bool acc : {false, true}) {
          const int64_t as = K + 3, bs = N + 3, cs = N + 3;
          std::vector<float> a(static_cast<size_t>(M * as)), b(static_cast<size_t>(K * bs)),
              c(static_cast<size_t>(M * cs));
          for (float& x : a) x = U(rng);
          for (float& x : b) x = U(rng);
          for (float& x : c) x = U(rng);
          std::vector<float> c2 = c;
          avx2->gemm_nn(a.data(), as, b.data(), bs, c2.data(), cs, M, N, K, acc);
          avx512->gemm_nn(a.data(), as, b.data(), bs, c.data(), cs, M, N, K, acc);
          ASSERT_EQ(std::memcmp(c.data(), c2.data(), c.size() * sizeof(float)), 0)
              << "M " << M << " N " << N << " K " << K << " acc " << acc;
        }
}

// exp_shift and silu_mul on 16 lanes take each lane through the AVX2 kernels' operations and sum in their order: the
// same bits, for lengths with and without a group of 8 and a scalar tail.
TEST(CpuKernels, Avx512ExpShiftAndSiluMulGiveTheAvx2Bits) {
  const Kernels* avx2 = avx2_kernels();
  const Kernels* avx512 = avx512_kernels();
  if (avx2 == nullptr || avx512 == nullptr) GTEST_SKIP() << "this CPU has no AVX-512 (or no AVX2): nothing to compare";
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> U(-95.0f, 0.0f), G(-30.0f, 30.0f);
  for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 1000, 1003}) {
    std::vector<float> x(static_cast<size_t>(n)), g(x.size()), u(x.size());
    for (float& v : x) v = U(rng);
    for (float& v : g) v = G(rng);
    for (float& v : u) v = G(rng);
    if (n > 5) x[3] = -std::numeric_limits<float>::infinity(), x[4] = std::numeric_limits<float>::quiet_NaN(),
               g[2] = -0.0f, g[3] = std::numeric_limits<float>::quiet_NaN(), g[4] = 100.0f, g[5] = -100.0f;
    std::vector<float> p(x.size()), p2(x.size()), y(x.size()), y2(x.size()), s(x.size()), s2(x.size());
    const float l = avx512->exp_shift(x.data(), 0.25f, p.data(), n);
    const float l2 = avx2->exp_shift(x.data(), 0.25f, p2.data(), n);
    EXPECT_EQ(std::memcmp(&l, &l2, sizeof(float)), 0) << "n " << n << ": " << l << " vs " << l2;
    EXPECT_EQ(std::memcmp(p.data(), p2.data(), p.size() * sizeof(float)), 0) << "exp_shift n " << n;
    avx512->silu_mul(g.data(), u.data(), y.data(), n);
    avx2->silu_mul(g.data(), u.data(), y2.data(), n);
    EXPECT_EQ(std::memcmp(y.data(), y2.data(), y.size() * sizeof(float)), 0) << "silu_mul n " << n;
    avx512->silu_mul(g.data(), nullptr, s.data(), n);
    avx2->silu_mul(g.data(), nullptr, s2.data(), n);
    EXPECT_EQ(std::memcmp(s.data(), s2.data(), s.size() * sizeof(float)), 0) << "silu n " << n;
  }
}

// delta_step (the recurrent gated delta rule's token) against the textbook order in double: S ← decay·S;
// u = beta·(v − Sᵀk); S ← S + k·uᵀ; o = Sᵀq; column counts with and without 8- and 32-wide tails.
TEST(CpuKernels, DeltaStepMatchesTheTextbookOrder) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> U(-1.0f, 1.0f);
  for (const Kernels* kr : variants()) {
    for (auto [dk, dv] : {std::pair<int64_t, int64_t>{128, 128}, {16, 8}, {5, 13}, {64, 40}, {3, 1}}) {
      std::vector<float> S(static_cast<size_t>(dk * dv)), k(static_cast<size_t>(dk)), q(k.size()),
          v(static_cast<size_t>(dv)), o(v.size()), tmp(2 * v.size());
      for (float& x : S) x = U(rng);
      for (float& x : k) x = U(rng) * 0.1f;
      for (float& x : q) x = U(rng);
      for (float& x : v) x = U(rng);
      const double decay = 0.9, beta = 0.7;
      std::vector<double> Sd(S.begin(), S.end()), u(v.size(), 0.0), od(v.size(), 0.0);
      for (double& x : Sd) x *= decay;
      for (int64_t j = 0; j < dv; ++j) {
        double m = 0.0;
        for (int64_t i = 0; i < dk; ++i) m += Sd[static_cast<size_t>(i * dv + j)] * k[static_cast<size_t>(i)];
        u[static_cast<size_t>(j)] = beta * (v[static_cast<size_t>(j)] - m);
      }
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j) {
          double& s = Sd[static_cast<size_t>(i * dv + j)];
          s += k[static_cast<size_t>(i)] * u[static_cast<size_t>(j)];
          od[static_cast<size_t>(j)] += s * q[static_cast<size_t>(i)];
        }
      kr->delta_step(S.data(), dk, dv, k.data(), q.data(), v.data(), float(decay), float(beta), o.data(), tmp.data());
      for (size_t i = 0; i < S.size(); ++i) ASSERT_NEAR(S[i], Sd[i], 1e-5) << kr->name << " dk " << dk << " dv " << dv << " S[" << i << "]";
      for (size_t j = 0; j < o.size(); ++j)
        ASSERT_NEAR(o[j], od[j], 1e-5 * static_cast<double>(dk) + 1e-6) << kr->name << " dk " << dk << " dv " << dv << " o[" << j << "]";
    }
  }
}

TEST(CpuKernels, ExpShiftMatchesStdExp) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> U(-90.0f, 0.0f);
  std::vector<float> x(1003);
  for (float& v : x) v = U(rng);
  x[0] = 0.0f, x[1] = -87.0f, x[2] = -88.0f, x[3] = -std::numeric_limits<float>::infinity(), x[4] = -1e-30f;
  for (size_t i = 5; i < 200; ++i) x[i] = -static_cast<float>(i - 5) * 0.003f;  // the near-1 range softmax lives in
  const float m = 0.5f;
  for (size_t i = 0; i < x.size(); ++i) x[i] += m;
  for (const Kernels* kr : variants()) {
    std::vector<float> p(x.size());
    const float l = kr->exp_shift(x.data(), m, p.data(), static_cast<int64_t>(x.size()));
    double want_sum = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = std::exp(double(x[i]) - double(m));  // x − m as the kernel rounds it
      const double xm = double(x[i] - m);
      want_sum += want;
      if (xm < -87.3) {  // flushed to 0 or a denormal/tiny std::exp value
        ASSERT_LE(p[i], 1.2e-38f) << kr->name << " x " << xm;
        continue;
      }
      ASSERT_NEAR(p[i], std::exp(xm), 4e-7 * std::exp(xm)) << kr->name << " x " << xm;
    }
    EXPECT_NEAR(l, want_sum, 1e-5 * want_sum) << kr->name;
    std::vector<float> nan(9, -1.0f);
    nan[3] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> pn(nan.size());
    EXPECT_TRUE(std::isnan(kr->exp_shift(nan.data(), 0.0f, pn.data(), 9))) << kr->name;
    EXPECT_TRUE(std::isnan(pn[3])) << kr->name;
    EXPECT_FLOAT_EQ(pn[2], std::exp(-1.0f)) << kr->name;
  }
}

// silu_mul against x / (1 + exp(−x)) · u in double: every sign and magnitude (±100 saturate one way or the other), a
// tail shorter than a vector, in place, without u; NaN stays NaN.
TEST(CpuKernels, SiluMulMatchesTheFormula) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> U(-30.0f, 30.0f);
  std::vector<float> g(1005), u(g.size());
  for (float& v : g) v = U(rng);
  for (float& v : u) v = U(rng) / 10.0f;
  g[0] = 0.0f, g[1] = -0.0f, g[2] = 100.0f, g[3] = -100.0f, g[4] = 88.0f, g[5] = -88.0f, g[6] = 1e-30f, g[7] = -1e-3f;
  for (const Kernels* kr : variants()) {
    std::vector<float> y(g.size()), s(g.size()), inplace = g;
    kr->silu_mul(g.data(), u.data(), y.data(), static_cast<int64_t>(g.size()));
    kr->silu_mul(g.data(), nullptr, s.data(), static_cast<int64_t>(g.size()));
    kr->silu_mul(inplace.data(), nullptr, inplace.data(), static_cast<int64_t>(g.size()));
    for (size_t i = 0; i < g.size(); ++i) {
      const double want = double(g[i]) / (1.0 + std::exp(-double(g[i])));
      ASSERT_NEAR(s[i], want, 1e-6 * std::fabs(want) + 1e-35) << kr->name << " x " << g[i];  // |silu| < 1e-35 may flush
      ASSERT_NEAR(y[i], want * u[i], 1e-6 * std::fabs(want * u[i]) + 1e-35) << kr->name << " x " << g[i];
      ASSERT_EQ(inplace[i], s[i]) << kr->name;
    }
    std::vector<float> nan(11, 1.0f), out(11);
    nan[9] = std::numeric_limits<float>::quiet_NaN();
    kr->silu_mul(nan.data(), nullptr, out.data(), 11);
    EXPECT_TRUE(std::isnan(out[9])) << kr->name;
    EXPECT_FLOAT_EQ(out[0], 1.0f / (1.0f + std::exp(-1.0f))) << kr->name;
  }
}

TEST(CpuKernels, TransposeToF32IsExactAndStaysInItsBlock) {
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (const Kernels* k : variants())
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16})
      for (int64_t rows : {1, 7, 8, 16, 19})
        for (int64_t cols : {1, 8, 13, 128}) {
          const int64_t ss = cols + 3, ds = rows + 5;
          std::vector<float> f(static_cast<size_t>(rows * ss));
          std::vector<uint16_t> h(f.size());
          for (size_t i = 0; i < f.size(); ++i) {
            f[i] = u(rng);
            h[i] = dt == DType::kBF16 ? f32_to_bf16(f[i]) : f32_to_f16(f[i]);
            if (dt != DType::kF32) f[i] = dt == DType::kBF16 ? bf16_to_f32(h[i]) : f16_to_f32(h[i]);
          }
          std::vector<float> d(static_cast<size_t>(cols * ds), -7.0f);
          k->transpose_to_f32(dt == DType::kF32 ? static_cast<const void*>(f.data()) : h.data(), dt, ss, rows, cols,
                              d.data(), ds);
          for (int64_t c = 0; c < cols; ++c)
            for (int64_t r = 0; r < ds; ++r)
              ASSERT_EQ(d[static_cast<size_t>(c * ds + r)], r < rows ? f[static_cast<size_t>(r * ss + c)] : -7.0f)
                  << k->name << " " << dtype_name(dt) << " " << rows << " x " << cols << " (" << r << ", " << c << ")";
        }
}

TEST(CpuKernels, StreamCopyIsExactAndStaysInItsRange) {
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  alignas(64) static float dst[4096 + 64];
  std::vector<float> src(4096 + 64);
  for (float& x : src) x = u(rng);
  src[5] = std::numeric_limits<float>::quiet_NaN();
  for (const Kernels* k : variants())
    for (int64_t offset : {0, 1, 8})  // 32-byte aligned (streamed), unaligned, aligned again
      for (int64_t n : {0, 1, 31, 32, 33, 1000, 4096}) {
        std::fill(std::begin(dst), std::end(dst), -7.0f);
        k->stream_copy(dst + offset, src.data(), n);
        for (int64_t i = 0; i < 4096 + 64; ++i) {
          const bool inside = i >= offset && i < offset + n;
          const float want = inside ? src[static_cast<size_t>(i - offset)] : -7.0f;
          ASSERT_EQ(std::memcmp(&dst[i], &want, sizeof(float)), 0)
              << k->name << " offset " << offset << " n " << n << " at " << i;
        }
      }
}

}  // namespace
}  // namespace ninfer::cpu
