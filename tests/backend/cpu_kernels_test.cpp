// The CPU kernel table's small row-major product gemm_nn (the chunked delta rule's building block): every variant
// against a double-precision reference on odd shapes (column tails of 1..7, rows not a multiple of the 6-row tile,
// strided operands, accumulate or overwrite), and nothing written outside the output block.
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "engine/backend/cpu/kernels.h"

namespace ninfer::cpu {
namespace {

std::vector<const Kernels*> variants() {
  std::vector<const Kernels*> v{&scalar_kernels()};
  if (const Kernels* k = avx2_kernels()) v.push_back(k);
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

}  // namespace
}  // namespace ninfer::cpu
