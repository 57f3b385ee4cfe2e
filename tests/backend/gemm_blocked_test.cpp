// Issue 23's GEMM paths against the ones they replace: the register-blocked
// AVX2 W4A4 kernel against its 4 x 1 kernel (the same bits), the AVX-512 VNNI
// lane kernel against its 4 x 1 kernel (within rounding; the same bits for a
// row in every tile), and the backend's linear with activations packed once per call against
// the legacy paths (CpuBackendOptions::legacy_gemm: the same bits) and against
// the scalar backend (summation order only), on odd shapes: M = 1..9, 17, 64; N
// and K not multiples of the tiles.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/kernels.h"
#include "engine/backend/cpu/nvfp4_linear.h"
#include "engine/core/half.h"
#include "tests/backend/nvfp4_test_data.h"
#include "tests/backend/test_util.h"

namespace ninfer {
namespace {

using nvfp4_test::activation_rows;
using nvfp4_test::adversarial_rows;
using nvfp4_test::pack;
using nvfp4_test::random_values;
using testing::run_strided_linear;
using testing::same_bits;

// The test rows at width K: the adversarial ones (ties, zero / denormal /
// non-finite rows) and 9 random ones, concatenated.
std::vector<float> test_rows(int64_t K, int64_t &M) {
  auto rows = adversarial_rows(K, static_cast<uint32_t>(K));
  const auto more = activation_rows(9, K, static_cast<uint32_t>(K + 3));
  for (int64_t m = 0; m < 9; ++m)
    rows.emplace_back(more.begin() + m * K, more.begin() + (m + 1) * K);
  M = static_cast<int64_t>(rows.size());
  std::vector<float> x;
  for (const auto &r : rows)
    x.insert(x.end(), r.begin(), r.end());
  return x;
}

// Every (K, N, first row, row count, accumulate) case of a blocked W4A4 kernel
// against the 4 x 1 kernel of its table.
void expect_blocked_equals_4x1(const cpu::Nvfp4Kernels &k4x1,
                               const cpu::Nvfp4Kernels &blocked) {
  for (int64_t K : {16, 112, 128, 144, 256, 272, 400, 1040, 2048}) {
    int64_t M = 0;
    const std::vector<float> x = test_rows(K, M);
    cpu::Nvfp4A4Rows a;
    cpu::nvfp4_size_a4(M, K, a);
    blocked.prepare_a4(x.data(), K, 0, M, 0.0f, a);
    for (int64_t N : {1, 2, 3, 5, 13}) {
      auto w = pack(
          random_values(N * K, static_cast<uint32_t>(N * K), 0.02f, true, K), N,
          K);
      const cpu::Nvfp4Weight wv = cpu::nvfp4_weight("test", w.view());
      for (int64_t m0 = 0; m0 < M; ++m0) {
        for (int r = 1; r <= cpu::kNvfp4MaxRows && m0 + r <= M; ++r) {
          const bool acc = (m0 + r) % 2 == 0;
          std::vector<float> want(static_cast<size_t>(r * N), 0.75f),
              got = want;
          k4x1.w4a4(wv, a, m0, r, 0, N, want.data(), N, acc);
          blocked.w4a4(wv, a, m0, r, 0, N, got.data(), N, acc);
          for (size_t i = 0; i < got.size(); ++i)
            ASSERT_TRUE(same_bits(got[i], want[i]))
                << blocked.name << " K=" << K << " N=" << N << " m0=" << m0
                << " rows=" << r << " i=" << i << ": " << got[i]
                << " != " << want[i];
        }
      }
    }
  }
}

TEST(GemmBlocked, W4A4BlockedKernelIsBitIdenticalToThe4x1Kernel) {
  if (!cpu::nvfp4_avx2_kernels())
    GTEST_SKIP() << "no AVX2 on this CPU";
  expect_blocked_equals_4x1(*cpu::nvfp4_avx2_4x1_kernels(),
                            *cpu::nvfp4_avx2_kernels());
}

// The AVX-512 lane kernel (one lane per block) sums in another order than its
// table's 4 x 1 kernel, so the two agree within rounding only. What must hold
// bit for bit: each row's output is the same whichever tile computes it (one row
// alone, as a decode step does, or inside 2-8 rows at any position, as
// speculative verification does).
TEST(GemmBlocked, Avx512VnniLaneKernelGivesARowTheSameBitsInEveryTile) {
  const cpu::Nvfp4Kernels *lanes = cpu::nvfp4_avx512_kernels();
  if (!lanes)
    GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or in this build)";
  const cpu::Nvfp4Kernels &k4x1 = *cpu::nvfp4_avx512_4x1_kernels();
  int64_t compared = 0;
  for (int64_t K : {16, 112, 256, 272, 400, 1040, 2048, 4096}) {
    int64_t M = 0;
    const std::vector<float> x = test_rows(K, M);
    cpu::Nvfp4A4Rows a;
    cpu::nvfp4_size_a4(M, K, a);
    lanes->prepare_a4(x.data(), K, 0, 3, 0.0f, a); // in two calls, as the
    lanes->prepare_a4(x.data(), K, 3, M, 0.0f, a); // backend's threads do
    for (int64_t N : {1, 3, 13}) {
      const auto wf =
          random_values(N * K, static_cast<uint32_t>(N * K), 0.02f, true, K);
      auto w = pack(wf, N, K);
      const cpu::Nvfp4Weight wv = cpu::nvfp4_weight("test", w.view());
      std::vector<float> alone(static_cast<size_t>(M * N)), old = alone;
      for (int64_t m = 0; m < M; ++m) {
        lanes->w4a4(wv, a, m, 1, 0, N, alone.data() + m * N, N, false);
        k4x1.w4a4(wv, a, m, 1, 0, N, old.data() + m * N, N, false);
      }
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          const float got = alone[m * N + n], want = old[m * N + n];
          if (std::isnan(want) || std::isinf(want)) {
            EXPECT_TRUE(same_bits(got, want))
                << "K=" << K << " m=" << m << " n=" << n;
            continue;
          }
          double mag = 0; // Σ|x·w|: the reordered sums differ within K · eps
          for (int64_t k = 0; k < K; ++k)
            mag += std::fabs(double(x[m * K + k]) * double(w.dequant[n * K + k]));
          EXPECT_NEAR(got, want, 1e-5 * mag + 1e-30)
              << "K=" << K << " m=" << m << " n=" << n;
          ++compared;
        }
      for (int64_t m0 = 0; m0 < M; ++m0) {
        for (int r = 2; r <= lanes->w4a4_max_rows && m0 + r <= M; ++r) {
          const bool acc = (m0 + r) % 2 == 0;
          std::vector<float> got(static_cast<size_t>(r * N), 0.75f);
          lanes->w4a4(wv, a, m0, r, 0, N, got.data(), N, acc);
          for (int m = 0; m < r; ++m)
            for (int64_t n = 0; n < N; ++n) {
              const float one = alone[(m0 + m) * N + n];
              ASSERT_TRUE(same_bits(got[m * N + n], acc ? 0.75f + one : one))
                  << "K=" << K << " N=" << N << " m0=" << m0 << " rows=" << r
                  << " m=" << m << " n=" << n << ": " << got[m * N + n];
            }
        }
      }
    }
  }
  EXPECT_GT(compared, 1000);
}

// The VBMI build of the lane kernel looks the nibbles up with vpermb instead of
// a mask and vpshufb; the terms and their order are the same, so every output
// must have the VNNI build's bits: 1-8 rows, K with and without a tail past the
// last 256-element step, accumulating or not, NaN/Inf rows included.
TEST(GemmBlocked, Avx512VbmiLaneKernelGivesTheVnniLaneKernelsBits) {
  const cpu::Nvfp4Kernels *vbmi = cpu::nvfp4_avx512_vbmi_kernels();
  if (!vbmi)
    GTEST_SKIP() << "no AVX-512 VBMI on this CPU (or in this build)";
  const cpu::Nvfp4Kernels &vnni = *cpu::nvfp4_avx512_kernels();
  int64_t compared = 0;
  for (int64_t K : {16, 256, 272, 1040, 2048, 4096}) {
    int64_t M = 0;
    const std::vector<float> x = test_rows(K, M);
    cpu::Nvfp4A4Rows a;
    cpu::nvfp4_size_a4(M, K, a);
    vbmi->prepare_a4(x.data(), K, 0, M, 0.0f, a);
    for (int64_t N : {1, 13}) {
      const auto wf =
          random_values(N * K, static_cast<uint32_t>(N + K), 0.02f, true, K);
      auto w = pack(wf, N, K);
      const cpu::Nvfp4Weight wv = cpu::nvfp4_weight("test", w.view());
      for (int rows = 1; rows <= vbmi->w4a4_max_rows; ++rows)
        for (int64_t m0 = 0; m0 + rows <= M; m0 += rows) {
          const bool acc = (m0 + rows) % 2 == 0;
          std::vector<float> got(static_cast<size_t>(rows * N), 0.75f),
              want = got;
          vbmi->w4a4(wv, a, m0, rows, 0, N, got.data(), N, acc);
          vnni.w4a4(wv, a, m0, rows, 0, N, want.data(), N, acc);
          for (size_t i = 0; i < got.size(); ++i, ++compared)
            ASSERT_TRUE(same_bits(got[i], want[i]))
                << "K=" << K << " N=" << N << " m0=" << m0 << " rows=" << rows
                << " i=" << i << ": " << got[i] << " vs " << want[i];
        }
    }
  }
  EXPECT_GT(compared, 1000);
}

TEST(GemmBlocked, LinearIsBitIdenticalToTheLegacyPathsAndCloseToScalar) {
  if (!cpu_has_avx2_fma())
    GTEST_SKIP() << "no AVX2 on this CPU";
  for (int64_t K : {144, 1040}) {
    const int64_t N = 37;
    const auto wf = random_values(N * K, 7, 0.05f);
    std::vector<uint16_t> wb(wf.size()), wh(wf.size());
    for (size_t i = 0; i < wf.size(); ++i)
      wb[i] = f32_to_bf16(wf[i]), wh[i] = f32_to_f16(wf[i]);
    auto wq = pack(wf, N, K);
    const std::vector<Tensor> weights = {
        Tensor::make(wb.data(), DType::kBF16, {N, K}),
        Tensor::make(wh.data(), DType::kF16, {N, K}),
        Tensor::make(const_cast<float *>(wf.data()), DType::kF32, {N, K}),
        wq.view()};
    for (int64_t M : {1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 64}) {
      const auto x = random_values(M * (K + 5), static_cast<uint32_t>(M + K));
      for (const Tensor &w : weights) {
        for (int run = 0; run < 4; ++run) {  // AVX2, then auto (the AVX-512 dense kernels where the CPU has them)
          const int threads = 1 + run % 2;
          const CpuBackendOptions now{.threads = threads,
                                      .simd = run < 2 ? CpuSimd::kAvx2 : CpuSimd::kAuto};
          CpuBackendOptions legacy = now;
          legacy.legacy_gemm = true;
          const auto got = run_strided_linear(now, x, w, M),
                     want = run_strided_linear(legacy, x, w, M);
          for (size_t i = 0; i < got.size(); ++i)
            ASSERT_TRUE(same_bits(got[i], want[i]))
                << dtype_name(w.dtype) << " K=" << K << " M=" << M
                << " i=" << i << " run " << run;
          if (w.dtype == DType::kNVFP4)
            continue; // W4A4 against the reference: nvfp4_linear_test.cpp
          const auto ref =
              run_strided_linear({.threads = 1, .simd = CpuSimd::kScalar}, x, w, M);
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) {
              double mag = 0; // Σ|x·w|: the bound of a reordered f32 sum is K ·
                              // eps · Σ|terms|, use 1e-5 of it
              for (int64_t k = 0; k < K; ++k)
                mag += std::fabs(double(x[m * (K + 5) + k]) *
                                 double(wf[n * K + k]));
              const size_t i = static_cast<size_t>(m * (N + 3) + n);
              EXPECT_NEAR(got[i], ref[i], 1e-5 * mag + 1e-6)
                  << dtype_name(w.dtype) << " M=" << M << " m=" << m;
            }
        }
      }
    }
  }
}

// Batch invariance, what makes greedy speculative decoding equal plain
// decoding: a row's output has the same bits whatever other rows share the call
// (a verification step's K + 1 rows against the one row of a decode step). With
// nvfp4 weights (W4A4 and W4A16):
TEST(GemmBlocked, AnNvfp4RowsOutputDoesNotDependOnTheOtherRowsOfTheCall) {
  for (int64_t K : {144, 1024}) {
    const int64_t N = 37;
    auto wq = pack(random_values(N * K, 11, 0.05f), N, K);
    for (Nvfp4Activations acts :
         {Nvfp4Activations::kNvfp4, Nvfp4Activations::kFloat})
      for (int threads : {1, 2})
        for (int64_t M : {2, 3, 4, 5, 8, 9}) {
          const CpuBackendOptions o{.threads = threads,
                                    .nvfp4_activations = acts};
          const auto x =
              random_values(M * (K + 5), static_cast<uint32_t>(M * 7 + K));
          const auto all = run_strided_linear(o, x, wq.view(), M);
          for (int64_t m = 0; m < M; ++m) {
            const std::vector<float> row(x.begin() + m * (K + 5),
                                         x.begin() + (m + 1) * (K + 5));
            const auto one = run_strided_linear(o, row, wq.view(), 1);
            for (int64_t n = 0; n < N; ++n)
              ASSERT_TRUE(same_bits(one[static_cast<size_t>(n)],
                                    all[static_cast<size_t>(m * (N + 3) + n)]))
                  << (acts == Nvfp4Activations::kNvfp4 ? "W4A4" : "W4A16")
                  << " K=" << K << " M=" << M << " row " << m << " n=" << n
                  << " threads " << threads;
          }
        }
  }
}

// Every output of an M-row linear (rows of K + 5 floats, run_strided_linear) has
// the bits the same row gives in a call of its own.
void expect_each_row_as_alone(const CpuBackendOptions &o,
                              const std::vector<float> &x, const Tensor &w,
                              int64_t M, const ::testing::Message &what) {
  const int64_t N = w.dim(0), K = w.dim(1);
  const auto all = run_strided_linear(o, x, w, M);
  for (int64_t m = 0; m < M; ++m) {
    const std::vector<float> row(x.begin() + m * (K + 5),
                                 x.begin() + (m + 1) * (K + 5));
    const auto one = run_strided_linear(o, row, w, 1);
    for (int64_t n = 0; n < N; ++n)
      ASSERT_TRUE(same_bits(one[static_cast<size_t>(n)],
                            all[static_cast<size_t>(m * (N + 3) + n)]))
          << what << " row " << m << " n=" << n;
  }
}

// The same with dense weights (f32, bf16, f16) and f32 activations: the one-row
// kernel sums each output in the tile's order (one 8-lane accumulator over k,
// four weight rows at a time). Before it did (four accumulators per weight row)
// this test found 44-247 of the 37·M outputs off in the last bits at M = 2..9.
TEST(GemmBlocked, ADenseRowsOutputDoesNotDependOnTheOtherRowsOfTheCall) {
  for (CpuSimd simd : {CpuSimd::kAuto, CpuSimd::kAvx2, CpuSimd::kScalar})
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16})
      for (int64_t K : {7, 100, 1024, 1300}) {
        if (simd == CpuSimd::kAvx2 && !cpu::avx2_kernels()) continue;
        const int64_t N = 37;
        testing::HostTensor w({N, K}, dt);
        w.values = random_values(N * K, 13, 0.05f);
        w.sync();
        for (int threads : {1, 2})
          for (int64_t M : {2, 3, 4, 5, 8, 9, 17}) {
            const CpuBackendOptions o{.threads = threads, .simd = simd};
            const auto x = random_values(M * (K + 5), static_cast<uint32_t>(M * 5 + K));
            expect_each_row_as_alone(o, x, w.view(), M,
                                     ::testing::Message() << dtype_name(dt)
                                                          << (simd == CpuSimd::kScalar ? " scalar"
                                                              : simd == CpuSimd::kAvx2 ? " avx2"
                                                                                       : " auto")
                                                          << " K=" << K << " M=" << M << " threads " << threads);
            if (::testing::Test::HasFatalFailure()) return;
          }
      }
}

// A matrix of few weight rows (the GDN gate projections: one per value head)
// against many activation rows is split by ranges of row tiles as well
// (CpuBackend::gemm_tasks), each range packed by its own task: every output is
// still the bits a one-row call gives, with f32 and bf16 activations.
TEST(GemmBlocked, ANarrowMatrixSplitByRowTilesGivesTheSameBits) {
  for (bool bf16_act : {false, true})
    for (DType dt : {DType::kF32, DType::kBF16})
      for (int64_t N : {6, 16})
        for (int64_t K : {100, 1024}) {
          if (bf16_act && dt != DType::kBF16) continue;
          testing::HostTensor w({N, K}, dt);
          w.values = random_values(N * K, static_cast<uint32_t>(N + K), 0.05f);
          w.sync();
          for (int threads : {1, 3})
            for (int64_t M : {100, 203}) {
              const CpuBackendOptions o{.threads = threads, .bf16_activations = bf16_act};
              const auto x = random_values(M * (K + 5), static_cast<uint32_t>(M + K));
              expect_each_row_as_alone(o, x, w.view(), M,
                                       ::testing::Message() << dtype_name(dt) << (bf16_act ? " bf16 activations" : "")
                                                            << " N=" << N << " K=" << K << " M=" << M << " threads "
                                                            << threads);
              if (::testing::Test::HasFatalFailure()) return;
            }
        }
}

} // namespace
} // namespace ninfer
