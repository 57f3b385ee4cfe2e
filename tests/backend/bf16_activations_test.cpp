// CpuBackendOptions::bf16_activations: a linear with bf16 weights rounds its activations to bf16. Checked against
// the f32-activation linear on activations rounded beforehand (the same products; bit for bit where the fallback
// GEMM runs them, within summation order where the AVX512-BF16 kernel does), against the f32-activation linear on the
// raw activations (within the rounding, 2^-8 of Σ|x·w|), and for the kernel: a row has the same bits in every tile
// and whatever the other rows of the call (decode and speculative verification rows agree).
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/bf16_linear.h"
#include "engine/core/half.h"
#include "tests/backend/nvfp4_test_data.h"
#include "tests/backend/test_util.h"

namespace ninfer {
namespace {

using nvfp4_test::random_values;
using testing::run_strided_linear;
using testing::same_bits;

std::vector<float> rounded(const std::vector<float>& x) {
  std::vector<float> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = bf16_to_f32(f32_to_bf16(x[i]));
  return r;
}

TEST(Bf16Activations, KernelGivesARowTheSameBitsInEveryTileAndMatchesF64) {
  const cpu::Bf16DotFn dot = cpu::bf16_dot_avx512();
  if (!dot) GTEST_SKIP() << "no AVX512-BF16 on this CPU (or in this build)";
  for (int64_t K : {16, 32, 40, 1000, 1040, 2048}) {
    const int64_t M = 7;
    const auto x = random_values(M * K, static_cast<uint32_t>(K), 1.0f);
    cpu::Bf16Rows a;
    cpu::bf16_size_rows(M, K, a);
    for (int64_t i = 0; i < M * K; ++i) a.storage[(i / K) * a.stride + i % K] = f32_to_bf16(x[i]);
    for (int64_t N : {1, 5, 13}) {
      const auto wf = random_values(N * K, static_cast<uint32_t>(N * K + 1), 0.05f);
      std::vector<uint16_t> w(wf.size());
      for (size_t i = 0; i < wf.size(); ++i) w[i] = f32_to_bf16(wf[i]);
      std::vector<float> alone(static_cast<size_t>(M * N));
      for (int64_t m = 0; m < M; ++m) dot(a, m, 1, w.data(), K, 0, N, alone.data() + m * N, N, false);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double want = 0, mag = 0;
          for (int64_t k = 0; k < K; ++k) {
            const double t = double(bf16_to_f32(a.row(m)[k])) * double(bf16_to_f32(w[n * K + k]));
            want += t, mag += std::fabs(t);
          }
          EXPECT_NEAR(alone[m * N + n], want, 1e-6 * mag) << "K=" << K << " m=" << m << " n=" << n;
        }
      for (int64_t m0 = 0; m0 < M; ++m0)
        for (int r = 2; r <= cpu::kBf16MaxRows && m0 + r <= M; ++r) {
          std::vector<float> got(static_cast<size_t>(r * N), 0.25f);
          dot(a, m0, r, w.data(), K, 0, N, got.data(), N, true);
          for (int m = 0; m < r; ++m)
            for (int64_t n = 0; n < N; ++n)
              ASSERT_TRUE(same_bits(got[m * N + n], 0.25f + alone[(m0 + m) * N + n]))
                  << "K=" << K << " N=" << N << " m0=" << m0 << " rows=" << r << " m=" << m << " n=" << n;
        }
    }
  }
}

TEST(Bf16Activations, LinearRoundsTheActivationsAndOnlyForBf16Weights) {
  const bool have_dot = cpu::bf16_dot_avx512() != nullptr;
  for (int64_t K : {40, 1040}) {
    const int64_t N = 37;
    const auto wf = random_values(N * K, 11, 0.05f);
    std::vector<uint16_t> wb(wf.size());
    for (size_t i = 0; i < wf.size(); ++i) wb[i] = f32_to_bf16(wf[i]);
    const Tensor w = Tensor::make(wb.data(), DType::kBF16, {N, K});
    for (int64_t M : {1, 2, 3, 5, 8, 17, 64}) {
      const auto x = random_values(M * (K + 5), static_cast<uint32_t>(M + K), 1.0f);
      const auto xr = rounded(x);
      for (int threads : {1, 2}) {
        // Without AVX512-BF16 (here: kAvx2) the rounded rows go through the f32-activation GEMM: the same bits.
        if (cpu_has_avx2_fma()) {
          const auto got = run_strided_linear({.threads = threads, .simd = CpuSimd::kAvx2, .bf16_activations = true}, x, w, M);
          const auto want = run_strided_linear({.threads = threads, .simd = CpuSimd::kAvx2}, xr, w, M);
          for (size_t i = 0; i < got.size(); ++i)
            ASSERT_TRUE(same_bits(got[i], want[i])) << "fallback K=" << K << " M=" << M << " i=" << i;
        }
        const auto got = run_strided_linear({.threads = threads, .bf16_activations = true}, x, w, M);
        const auto exact = run_strided_linear({.threads = threads, .simd = CpuSimd::kScalar}, x, w, M);
        const auto on_rounded = run_strided_linear({.threads = threads, .simd = CpuSimd::kScalar}, xr, w, M);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double mag = 0;  // Σ|x·w|
            for (int64_t k = 0; k < K; ++k) mag += std::fabs(double(x[m * (K + 5) + k]) * double(wf[n * K + k]));
            const size_t i = static_cast<size_t>(m * (N + 3) + n);
            EXPECT_NEAR(got[i], on_rounded[i], 1e-5 * mag + 1e-6) << "K=" << K << " M=" << M << " m=" << m;
            EXPECT_NEAR(got[i], exact[i], 0x1p-8 * mag + 1e-6) << "K=" << K << " M=" << M << " m=" << m;
          }
        // With the kernel, each row as in a call of its own (the one-row call is what a decode step makes).
        if (have_dot && M > 1) {
          for (int64_t m = 0; m < M; ++m) {
            const std::vector<float> row(x.begin() + m * (K + 5), x.begin() + (m + 1) * (K + 5));
            const auto one = run_strided_linear({.threads = threads, .bf16_activations = true}, row, w, 1);
            for (int64_t n = 0; n < N; ++n)
              ASSERT_TRUE(same_bits(got[m * (N + 3) + n], one[n])) << "K=" << K << " M=" << M << " m=" << m;
          }
        }
      }
    }
  }
  // f32 and f16 weights keep f32 activations.
  const int64_t N = 9, K = 72, M = 3;
  const auto wf = random_values(N * K, 5, 0.05f);
  std::vector<uint16_t> wh(wf.size());
  for (size_t i = 0; i < wf.size(); ++i) wh[i] = f32_to_f16(wf[i]);
  const auto x = random_values(M * (K + 5), 6, 1.0f);
  for (const Tensor& w : {Tensor::make(const_cast<float*>(wf.data()), DType::kF32, {N, K}),
                          Tensor::make(wh.data(), DType::kF16, {N, K})}) {
    const auto got = run_strided_linear({.threads = 2, .bf16_activations = true}, x, w, M);
    const auto want = run_strided_linear({.threads = 2}, x, w, M);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(same_bits(got[i], want[i])) << dtype_name(w.dtype) << " " << i;
  }
}

}  // namespace
}  // namespace ninfer
