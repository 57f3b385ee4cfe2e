// NVFP4 linear on the CPU backend: the W4A4 activation quantizer against quantize_nvfp4 (ModelOpt-exact), the scalar
// reference against dequantize_nvfp4 + f64 dots, every SIMD kernel against the reference, and the backend op.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/artifact/dtype.h"
#include "engine/backend/backend.h"
#include "engine/backend/cpu/nvfp4_linear.h"
#include "engine/core/error.h"
#include "engine/quant/nvfp4.h"
#include "tests/backend/nvfp4_test_data.h"

namespace ninfer {
namespace {

using cpu::Nvfp4Weight;
using nvfp4_test::activation_rows;
using nvfp4_test::adversarial_rows;
using nvfp4_test::pack;
using nvfp4_test::PackedWeight;
using nvfp4_test::random_values;

TEST(Nvfp4Quantizer, RowIsBitIdenticalToQuantizeNvfp4) {
  for (int64_t K : {16, 64, 272, 1024}) {
    const auto x = activation_rows(8, K, static_cast<uint32_t>(K));
    for (int64_t m = 0; m < 8; ++m) {
      const float* row = x.data() + m * K;
      const std::array<int64_t, 2> shape = {1, K};
      const auto layout = *nvfp4_layout(shape);
      std::vector<std::byte> want(layout.total_bytes);
      std::vector<uint8_t> codes(static_cast<size_t>(K / 2)), scales(static_cast<size_t>(K / 16));
      // dynamic: g = amax / 2688, the whole-tensor recipe on one row
      quantize_nvfp4(row, 1, static_cast<uint64_t>(K), want);
      float g = cpu::nvfp4_quantize_row(row, K, 0.0f, codes.data(), scales.data());
      float want_g;
      std::memcpy(&want_g, want.data() + layout.tensor_scale_offset, 4);
      EXPECT_EQ(std::memcmp(&g, &want_g, 4), 0) << "K=" << K << " row " << m;
      EXPECT_EQ(std::memcmp(codes.data(), want.data(), codes.size()), 0) << "K=" << K << " row " << m;
      EXPECT_EQ(std::memcmp(scales.data(), want.data() + layout.scales_offset, scales.size()), 0);
      // static: the checkpoint's input scale, also one small enough to saturate (scales clamp at 448, codes at 6)
      for (float input_scale : {0.05f, 1e-4f}) {
        quantize_nvfp4(row, 1, static_cast<uint64_t>(K), input_scale, want);
        g = cpu::nvfp4_quantize_row(row, K, input_scale, codes.data(), scales.data());
        EXPECT_EQ(g, input_scale);
        EXPECT_EQ(std::memcmp(codes.data(), want.data(), codes.size()), 0) << "static " << input_scale;
        EXPECT_EQ(std::memcmp(scales.data(), want.data() + layout.scales_offset, scales.size()), 0);
      }
    }
  }
}

TEST(Nvfp4Quantizer, ZeroRowAndNonFiniteRow) {
  std::vector<float> x(32, 0.0f);
  std::vector<uint8_t> codes(16, 0xAA), scales(2, 0);
  EXPECT_EQ(cpu::nvfp4_quantize_row(x.data(), 32, 0.0f, codes.data(), scales.data()), 0.0f);
  for (auto c : codes) EXPECT_EQ(c, 0);
  for (auto s : scales) EXPECT_EQ(s, 0x38);  // 1.0
  x[5] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(cpu::nvfp4_quantize_row(x.data(), 32, 0.0f, codes.data(), scales.data())));
}

// The AVX2 activation quantizer (both SIMD tables' prepare_a4; the AVX-512 one adds the lane form) writes the same
// bytes as the scalar reference (nvfp4_quantize_row + layout), which the test above ties to quantize_nvfp4.
TEST(Nvfp4Quantizer, SimdPrepareIsByteIdenticalToTheScalarReference) {
  std::vector<const cpu::Nvfp4Kernels*> tables;
  if (auto* k = cpu::nvfp4_avx2_kernels()) tables.push_back(k);
  if (auto* k = cpu::nvfp4_avx512_kernels()) tables.push_back(k);
  if (tables.empty()) GTEST_SKIP() << "no AVX2 on this CPU";
  for (int64_t K : {16, 32, 48, 272, 1024, 3584}) {
    const auto rows = adversarial_rows(K, static_cast<uint32_t>(K));
    const int64_t M = static_cast<int64_t>(rows.size()), xs = K + 16;  // strided rows
    std::vector<float> x(static_cast<size_t>(M * xs), 77.0f);
    for (int64_t m = 0; m < M; ++m) std::copy(rows[m].begin(), rows[m].end(), x.begin() + m * xs);
    const int64_t defined = 2 * K + 4 * (K / 8 + 1) + K / 2 + K / 16;  // mag, sgn, scales + g, codes, E4M3 scales
    for (float input_scale : {0.0f, 0.5f, 0.05f, 1e-4f, 1e-30f, 1e30f}) {
      cpu::Nvfp4A4Rows want, got;
      cpu::nvfp4_size_a4(M, K, want);
      std::fill(want.storage.begin(), want.storage.end(), uint8_t{0xCD});
      cpu::nvfp4_prepare_a4(x.data(), xs, 0, M, input_scale, want);
      for (const auto* t : tables) {
        cpu::nvfp4_size_a4(M, K, got);
        std::fill(got.storage.begin(), got.storage.end(), uint8_t{0xCD});
        t->prepare_a4(x.data(), xs, 0, 2, input_scale, got);  // two calls, as the backend splits rows over threads
        t->prepare_a4(x.data(), xs, 2, M, input_scale, got);
        // + the blocked kernels' s8 values and corrections; + the lane form, which only the AVX-512 table writes
        const int64_t end = t == cpu::nvfp4_avx512_kernels() ? want.row_bytes : want.blocked + 3 * K / 2;
        for (int64_t m = 0; m < M; ++m) {
          for (int64_t i = 0; i < end; ++i) {
            if (i >= defined && i < want.blocked) continue;                 // padding
            if (i >= want.blocked + 3 * K / 2 && i < want.lanes) continue;  // padding
            if (want.row(m)[i] != got.row(m)[i]) {
              ADD_FAILURE() << t->name << " K=" << K << " input_scale " << input_scale << " row " << m << " byte " << i
                            << ": " << int(got.row(m)[i]) << " != " << int(want.row(m)[i]);
              break;
            }
          }
        }
      }
    }
  }
}

// f64 dot of dequantized values; also Σ|terms| for the tolerance.
std::pair<double, double> dot64(const float* a, const float* b, int64_t K) {
  double s = 0, sa = 0;
  for (int64_t k = 0; k < K; ++k) {
    s += double(a[k]) * double(b[k]);
    sa += std::fabs(double(a[k]) * double(b[k]));
  }
  return {s, sa};
}

TEST(Nvfp4Reference, W4A16IsTheDequantizedDot) {
  const int64_t N = 9, K = 272;
  auto w = pack(random_values(N * K, 3, 0.02f, true, K), N, K);
  const auto x = activation_rows(1, K, 4);
  const Nvfp4Weight wv = cpu::nvfp4_weight("test", w.view());
  for (int64_t n = 0; n < N; ++n) {
    const auto [want, mag] = dot64(x.data(), w.dequant.data() + n * K, K);
    EXPECT_NEAR(cpu::nvfp4_dot_w4a16_ref(wv, n, x.data()), want, 1e-6 * mag + 1e-30) << n;
  }
}

TEST(Nvfp4Reference, W4A4IsTheDotOfBothDequantizedOperands) {
  const int64_t N = 9, K = 1040;
  auto w = pack(random_values(N * K, 5, 0.02f, true, K), N, K);
  const auto x = activation_rows(4, K, 6);
  const Nvfp4Weight wv = cpu::nvfp4_weight("test", w.view());
  for (int64_t m = 0; m < 4; ++m) {
    // the activation row's quantization, dequantized with the library's dequantizer
    const std::array<int64_t, 2> shape = {1, K};
    const auto layout = *nvfp4_layout(shape);
    std::vector<std::byte> q(layout.total_bytes, std::byte{0});
    const float g = cpu::nvfp4_quantize_row(x.data() + m * K, K, 0.0f, reinterpret_cast<uint8_t*>(q.data()),
                                            reinterpret_cast<uint8_t*>(q.data() + layout.scales_offset));
    std::memcpy(q.data() + layout.tensor_scale_offset, &g, 4);
    std::vector<float> xa(static_cast<size_t>(K));
    dequantize_nvfp4(q, 1, static_cast<uint64_t>(K), xa.data());
    for (int64_t n = 0; n < N; ++n) {
      const auto [want, mag] = dot64(xa.data(), w.dequant.data() + n * K, K);
      const float got = cpu::nvfp4_dot_w4a4_ref(wv, n, reinterpret_cast<const uint8_t*>(q.data()),
                                                reinterpret_cast<const uint8_t*>(q.data() + layout.scales_offset), g);
      EXPECT_NEAR(got, want, 1e-6 * mag + 1e-30) << m << "," << n;
    }
  }
}

// Every kernel table this CPU has, through the raw kernel entry points, against the reference.
TEST(Nvfp4Kernels, MatchTheScalarReference) {
  std::vector<const cpu::Nvfp4Kernels*> tables;
  if (auto* k = cpu::nvfp4_avx2_kernels()) tables.push_back(k);
  if (auto* k = cpu::nvfp4_avx512_kernels()) tables.push_back(k);
  if (auto* k = cpu::nvfp4_avx512_vbmi_kernels()) tables.push_back(k);
  std::printf("nvfp4 kernel tables on this CPU: %zu\n", tables.size());
  for (int64_t K : {16, 128, 256, 272, 1024, 1040}) {
    const int64_t N = 13, M = cpu::kNvfp4LaneMaxRows;
    auto w = pack(random_values(N * K, static_cast<uint32_t>(K), 0.02f, true, K), N, K);
    const Nvfp4Weight wv = cpu::nvfp4_weight("test", w.view());
    const auto x = activation_rows(M, K, static_cast<uint32_t>(K + 1));
    cpu::Nvfp4A4Rows a4;
    cpu::nvfp4_size_a4(M, K, a4);
    cpu::nvfp4_prepare_a4(x.data(), K, 0, M, 0.0f, a4);
    std::vector<float> a16(static_cast<size_t>(M * K));
    cpu::nvfp4_prepare_a16(x.data(), K, 0, M, K, a16.data());
    for (const auto* t : tables) {
      for (int rows = 1; rows <= t->w4a4_max_rows; ++rows) {
        for (int mode = 0; mode < (rows <= cpu::kNvfp4MaxRows ? 2 : 1); ++mode) {  // w4a16: up to kNvfp4MaxRows
          std::vector<float> y(static_cast<size_t>(rows * N), 1.0f);
          const bool acc = rows % 2 == 0;
          if (mode == 0) t->w4a4(wv, a4, M - rows, rows, 0, N, y.data(), N, acc);
          else t->w4a16(wv, a16.data() + (M - rows) * K, rows, 0, N, y.data(), N, acc);
          for (int m = 0; m < rows; ++m) {
            const int64_t r = M - rows + m;
            for (int64_t n = 0; n < N; ++n) {
              const float ref = mode == 0 ? cpu::nvfp4_dot_w4a4_ref(wv, n, a4.codes(r), a4.scales(r), a4.global(r))
                                          : cpu::nvfp4_dot_w4a16_ref(wv, n, x.data() + r * K);
              // summation order only: bound by K · eps · Σ|terms| (Σ|terms| ≤ Σ|x|·max|w| is loose; use a
              // relative bound on the dequantized magnitudes)
              const auto [d, mag] = dot64(x.data() + r * K, w.dequant.data() + n * K, K);
              (void)d;
              const double tol = 2e-6 * mag * (mode == 0 ? 2.0 : 1.0) + 1e-30;
              EXPECT_NEAR(y[static_cast<size_t>(m * N + n)], (acc ? 1.0f : 0.0f) + ref, tol)
                  << t->name << " mode " << mode << " K=" << K << " rows=" << rows << " m=" << m << " n=" << n;
            }
          }
        }
      }
    }
  }
}

std::unique_ptr<Backend> backend(CpuSimd simd, Nvfp4Activations a, int threads = 2) {
  return make_cpu_backend({.threads = threads, .simd = simd, .nvfp4_activations = a});
}

std::vector<CpuSimd> simd_variants() {
  std::vector<CpuSimd> v = {CpuSimd::kScalar, CpuSimd::kAuto};
  if (cpu_has_avx2_fma() && cpu::nvfp4_avx2_kernels()) v.push_back(CpuSimd::kAvx2);
  return v;
}

// The backend op (threads, row tiles, strided x/y, accumulate) against f32 linear on the dequantized weight.
TEST(Nvfp4Linear, W4A16MatchesF32LinearOfTheDequantizedWeight) {
  for (CpuSimd simd : simd_variants()) {
    for (int64_t M : {1, 3, 9}) {
      const int64_t N = 70, K = 1024 + 32;
      auto w = pack(random_values(N * K, 11, 0.02f, true, K), N, K);
      auto x = activation_rows(M, K + 8, 12);  // row stride K + 8
      const Tensor xt = Tensor::strided(x.data(), DType::kF32, {M, K}, {K + 8, 1});
      auto be = backend(simd, Nvfp4Activations::kFloat);
      auto f32 = backend(CpuSimd::kScalar, Nvfp4Activations::kFloat, 1);
      std::vector<float> y(static_cast<size_t>(M * (N + 3)), 0.5f), ref(static_cast<size_t>(M * N), 0.5f);
      be->linear(Tensor::strided(y.data(), DType::kF32, {M, N}, {N + 3, 1}), xt, w.view(), true);
      f32->linear(Tensor::make(ref.data(), DType::kF32, {M, N}), xt, Tensor::make(w.dequant.data(), DType::kF32, {N, K}),
                  true);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          const auto [d, mag] = dot64(x.data() + m * (K + 8), w.dequant.data() + n * K, K);
          (void)d;
          EXPECT_NEAR(y[static_cast<size_t>(m * (N + 3) + n)], ref[static_cast<size_t>(m * N + n)], 4e-6 * mag)
              << be->name() << " M=" << M << " m=" << m << " n=" << n;
        }
    }
  }
}

TEST(Nvfp4Linear, W4A4MatchesTheReferenceAndIsWithinActivationQuantizationError) {
  for (CpuSimd simd : simd_variants()) {
    for (int64_t M : {1, 5}) {
      const int64_t N = 37, K = 2048;
      auto w = pack(random_values(N * K, 21, 0.02f), N, K);
      const auto x = activation_rows(M, K, 22);
      auto be = backend(simd, Nvfp4Activations::kNvfp4);
      std::vector<float> y(static_cast<size_t>(M * N));
      be->linear(Tensor::make(y.data(), DType::kF32, {M, N}), Tensor::make(const_cast<float*>(x.data()), DType::kF32, {M, K}),
                 w.view(), false);
      const Nvfp4Weight wv = cpu::nvfp4_weight("test", w.view());
      double err2 = 0, ref2 = 0;
      for (int64_t m = 0; m < M; ++m) {
        std::vector<uint8_t> codes(static_cast<size_t>(K / 2)), scales(static_cast<size_t>(K / 16));
        const float g = cpu::nvfp4_quantize_row(x.data() + m * K, K, 0.0f, codes.data(), scales.data());
        for (int64_t n = 0; n < N; ++n) {
          const float got = y[static_cast<size_t>(m * N + n)];
          const auto [exact, mag] = dot64(x.data() + m * K, w.dequant.data() + n * K, K);
          EXPECT_NEAR(got, cpu::nvfp4_dot_w4a4_ref(wv, n, codes.data(), scales.data(), g), 4e-6 * mag) << be->name();
          err2 += (got - exact) * (got - exact);
          ref2 += exact * exact;
        }
      }
      // NVFP4 activations carry ~2-3 bits of mantissa: a relative RMS error of a few percent, never zero.
      const double rel = std::sqrt(err2 / ref2);
      EXPECT_GT(rel, 1e-3) << be->name();
      EXPECT_LT(rel, 0.12) << be->name();
    }
  }
}

TEST(Nvfp4Linear, UsesTheCheckpointInputScale) {
  const int64_t N = 8, K = 256, M = 2;
  auto w = pack(random_values(N * K, 31, 0.02f), N, K);
  const auto x = activation_rows(M, K, 32);
  const float input_scale = 0.01f;  // static global scale, smaller than amax/2688 for the outlier row: saturates
  w.set_input_scale(input_scale);
  const Nvfp4Weight wv = cpu::nvfp4_weight("test", w.view());
  EXPECT_EQ(wv.input_scale, input_scale);
  for (CpuSimd simd : simd_variants()) {
    auto be = backend(simd, Nvfp4Activations::kNvfp4);
    std::vector<float> y(static_cast<size_t>(M * N));
    be->linear(Tensor::make(y.data(), DType::kF32, {M, N}), Tensor::make(const_cast<float*>(x.data()), DType::kF32, {M, K}),
               w.view(), false);
    for (int64_t m = 0; m < M; ++m) {
      std::vector<uint8_t> codes(static_cast<size_t>(K / 2)), scales(static_cast<size_t>(K / 16));
      ASSERT_EQ(cpu::nvfp4_quantize_row(x.data() + m * K, K, input_scale, codes.data(), scales.data()), input_scale);
      for (int64_t n = 0; n < N; ++n) {
        const auto [d, mag] = dot64(x.data() + m * K, w.dequant.data() + n * K, K);
        (void)d;
        EXPECT_NEAR(y[static_cast<size_t>(m * N + n)], cpu::nvfp4_dot_w4a4_ref(wv, n, codes.data(), scales.data(), input_scale),
                    4e-6 * mag);
      }
    }
  }
}

TEST(Nvfp4Linear, NonFiniteActivationRowGivesNaNOutputsOnlyThere) {
  const int64_t N = 8, K = 256, M = 2;
  auto w = pack(random_values(N * K, 41, 0.02f), N, K);
  auto x = activation_rows(M, K, 42);
  x[static_cast<size_t>(K + 7)] = std::numeric_limits<float>::quiet_NaN();
  for (CpuSimd simd : simd_variants()) {
    auto be = backend(simd, Nvfp4Activations::kNvfp4);
    std::vector<float> y(static_cast<size_t>(M * N));
    be->linear(Tensor::make(y.data(), DType::kF32, {M, N}), Tensor::make(x.data(), DType::kF32, {M, K}), w.view(), false);
    for (int64_t n = 0; n < N; ++n) {
      EXPECT_TRUE(std::isfinite(y[static_cast<size_t>(n)]));
      EXPECT_TRUE(std::isnan(y[static_cast<size_t>(N + n)]));
    }
  }
}

TEST(Nvfp4Linear, RejectsBadShapes) {
  auto w = pack(random_values(8 * 64, 51, 0.02f), 8, 64);
  std::vector<float> x(2 * 80), y(2 * 8);
  auto be = backend(CpuSimd::kAuto, Nvfp4Activations::kNvfp4);
  EXPECT_THROW(be->linear(Tensor::make(y.data(), DType::kF32, {2, 8}), Tensor::make(x.data(), DType::kF32, {2, 80}),
                          w.view(), false),
               Error);
  Tensor bad = w.view();
  bad.shape[1] = 60;  // not a multiple of 16
  EXPECT_THROW(be->linear(Tensor::make(y.data(), DType::kF32, {2, 8}), Tensor::make(x.data(), DType::kF32, {2, 60}), bad,
                          false),
               Error);
  std::vector<std::byte> nan_trailer = w.bytes;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(nan_trailer.data() + nan_trailer.size() - 16, &nan, 4);
  EXPECT_THROW(be->linear(Tensor::make(y.data(), DType::kF32, {2, 8}), Tensor::make(x.data(), DType::kF32, {2, 64}),
                          Tensor::make(nan_trailer.data(), DType::kNVFP4, {8, 64}), false),
               Error);
}

}  // namespace
}  // namespace ninfer
