// The CUDA linear op against the CPU backend: dense f32/bf16/f16 weights (GEMV for M <= 8, tiled GEMM above), NVFP4
// W4A4 (with both sets of decode kernels, kern::W4a4Gemv) and W4A16, odd shapes, accumulate, strided x/y (and weight)
// rows; both W4A4 activation quantizers byte for byte against nvfp4_quantize_row on adversarial rows; and the
// argument errors the CPU op raises.
//
// Tolerance (docs/cuda-backend.md): the kernels sum the same f32 terms as the CPU in another order (split K, FMA), so
// each output must be within 1e-5 · scale_m of the CPU's, scale_m = max over the row of max(|y_cpu|, Σ_k|x_k·w_k| / √K)
// (the second term keeps rows whose outputs happen to cancel from setting a tolerance of ~0). NaN must match NaN.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/backend/cpu/nvfp4_linear.h"
#include "tests/backend/nvfp4_test_data.h"
#include "tests/cuda/cuda_test_support.h"

#if defined(NINFER_WITH_CUDA)
#include "engine/backend/cuda/nvfp4_quantize.h"
#endif

namespace ninfer::testing {
namespace {

constexpr double kLinearTol = 1e-5;
// Plus this many f32 epsilons of sum|x·w| per output: the CPU and the GPU add the same f32 products in different
// orders, and on the adversarial nvfp4 rows (outliers that cancel to 1/200 of sum|x·w|) that order alone moves the
// result by up to ~2 epsilons of sum|x·w| (seen on an H200: 1.8 at K 4096, sum|x·w| 9.3e6).
constexpr double kSumOrderEps = 4.0;

const std::vector<int64_t> kRowCounts = {1, 2, 3, 5, 8, 9, 17, 64, 130};
// Every GEMV row count (decode, and the K + 1 rows of a speculative verify), then the GEMMs'.
const std::vector<int64_t> kGemvRowCounts = {1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 64, 130};
const std::vector<int64_t> kDecodeRowCounts = {1, 2, 3, 4, 5, 6, 7, 8};

// Which kernels a GPU linear runs: the backend's linear() as configured, or W4A4 with the tiled or the streaming
// decode kernels (kern::W4a4Gemv, through cuda::linear_w4a4). Every W4A4 case runs with both.
enum class Gemv { kBackend, kTiled, kStream };
constexpr Gemv kW4a4Variants[] = {Gemv::kTiled, Gemv::kStream};
const char* gemv_name(Gemv g) { return g == Gemv::kTiled ? " tiled" : g == Gemv::kStream ? " stream" : ""; }

void gpu_linear(Backend& be, const Tensor& y, const Tensor& x, const Tensor& w, bool accumulate, Gemv gemv) {
#if defined(NINFER_WITH_CUDA)
  if (gemv != Gemv::kBackend) {
    cuda::linear_w4a4(be, y, x, w, accumulate, gemv == Gemv::kTiled ? kern::W4a4Gemv::kTiled : kern::W4a4Gemv::kStream);
    return;
  }
#endif
  be.linear(y, x, w, accumulate);
}

// Host f32 rows [M, K] with row stride `stride` (>= K), the padding filled with a poison value.
struct HostRows {
  int64_t M, K, stride;
  std::vector<float> data;
  HostRows(int64_t m, int64_t k, int64_t s, float fill = 0.0f) : M(m), K(k), stride(s), data(static_cast<size_t>(m * s), 1e30f) {
    for (int64_t r = 0; r < M; ++r)
      for (int64_t c = 0; c < K; ++c) at(r, c) = fill;
  }
  float& at(int64_t r, int64_t c) { return data[static_cast<size_t>(r * stride + c)]; }
  Tensor view() { return Tensor::strided(data.data(), DType::kF32, {M, K}, {stride, 1}); }
  std::vector<float> packed() {
    std::vector<float> v(static_cast<size_t>(M * K));
    for (int64_t r = 0; r < M; ++r)
      for (int64_t c = 0; c < K; ++c) v[static_cast<size_t>(r * K + c)] = at(r, c);
    return v;
  }
};

// The same rows on the device, with the same row stride.
DeviceTensor upload_rows(HostRows& h) {
  DeviceTensor d = device_alloc(DType::kF32, {h.M, h.K}, {h.stride, 1});
  gpu().copy(d.t, h.view());
  return d;
}

// Σ_k |x_k · w_k| per output (non-finite x counted as 0), for the tolerance scale.
std::vector<double> abs_dots(const std::vector<float>& x, const std::vector<float>& w, int64_t M, int64_t N,
                             int64_t K) {
  std::vector<double> s(static_cast<size_t>(M * N), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double a = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        const float xv = x[static_cast<size_t>(m * K + k)];
        if (std::isfinite(xv)) a += std::fabs(double(xv) * double(w[static_cast<size_t>(n * K + k)]));
      }
      s[static_cast<size_t>(m * N + n)] = a;
    }
  return s;
}

::testing::AssertionResult rows_close(const std::vector<float>& got, const std::vector<float>& want,
                                      const std::vector<double>& absdot, int64_t M, int64_t N, int64_t K) {
  size_t bad = 0;
  std::string first;
  for (int64_t m = 0; m < M; ++m) {
    double scale = 0.0;
    for (int64_t n = 0; n < N; ++n) {
      const size_t i = static_cast<size_t>(m * N + n);
      if (std::isfinite(want[i])) scale = std::max(scale, std::fabs(double(want[i])));
      scale = std::max(scale, absdot[i] / std::sqrt(double(std::max<int64_t>(K, 1))));
    }
    for (int64_t n = 0; n < N; ++n) {
      const size_t i = static_cast<size_t>(m * N + n);
      // NaN matches NaN and an infinity the same infinity (W4A16 carries a row's inf through, as the CPU does).
      const bool ok = std::isnan(want[i])   ? std::isnan(got[i])
                      : std::isinf(want[i]) ? got[i] == want[i]
                                            : std::fabs(double(got[i]) - double(want[i])) <=
                                                  kLinearTol * scale + kSumOrderEps * FLT_EPSILON * absdot[i];
      if (!ok) {
        if (bad < 5)
          first += " [" + std::to_string(m) + "," + std::to_string(n) + "] " + std::to_string(got[i]) + " vs " +
                   std::to_string(want[i]) + " (scale " + std::to_string(scale) + ")";
        ++bad;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " outputs differ:" << first;
}

// One linear call on both backends from the same host inputs; returns (gpu, cpu) outputs as [M, N].
struct LinearCase {
  int64_t M, N, K;
  bool accumulate, strided;
};

void fill_random(HostRows& h, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t r = 0; r < h.M; ++r)
    for (int64_t c = 0; c < h.K; ++c) h.at(r, c) = d(rng);
}

// Runs gpu_be.linear and cpu_be.linear on copies of x and an initial y (random when accumulating), compares.
void check_linear_case(Backend& gpu_be, Backend& cpu_be, const LinearCase& c, HostRows& x, const Tensor& w_host,
                       const Tensor& w_dev, const std::vector<float>& w_values, std::mt19937& rng,
                       const std::string& what, Gemv gemv = Gemv::kBackend) {
  SCOPED_TRACE(what + " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) +
               (c.accumulate ? " accumulate" : "") + (c.strided ? " strided" : ""));
  HostRows y(c.M, c.N, c.strided ? c.N + 5 : c.N);
  if (c.accumulate) fill_random(y, rng, -1.0f, 1.0f);
  DeviceTensor xd = upload_rows(x);
  DeviceTensor yd = upload_rows(y);
  gpu().synchronize();
  gpu_linear(gpu_be, yd.t, xd.t, w_dev, c.accumulate, gemv);
  gpu_be.synchronize();
  cpu_be.linear(y.view(), x.view(), w_host, c.accumulate);
  const std::vector<float> got = to_host_f32(yd.t);
  EXPECT_TRUE(rows_close(got, y.packed(), abs_dots(x.packed(), w_values, c.M, c.N, c.K), c.M, c.N, c.K));
}

// ---- dense ----

void run_dense(DType dt, const std::vector<std::pair<int64_t, int64_t>>& nks, const std::vector<int64_t>& ms,
               uint32_t seed) {
  std::mt19937 rng(seed);
  for (auto [N, K] : nks) {
    HostTensor w = random_tensor({N, K}, rng, -1.0f, 1.0f, dt);
    DeviceTensor wd = to_device(w);
    for (int64_t M : ms)
      for (int variant = 0; variant < 3; ++variant) {
        const LinearCase c{M, N, K, variant == 1, variant != 0};
        HostRows x(M, K, c.strided ? K + 3 : K);
        fill_random(x, rng, -1.0f, 1.0f);
        check_linear_case(gpu(), cpu_oracle(), c, x, w.view(), wd.t, w.values, rng, std::string(dtype_name(dt)));
      }
  }
}

TEST(CudaLinear, DenseSmallShapes) {
  NINFER_REQUIRE_CUDA();
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16})
    run_dense(dt, {{1, 16}, {7, 5}, {33, 67}}, {1, 2, 3, 9}, 1);
}

TEST(CudaLinear, DenseEveryRowCountAndDtype) {
  NINFER_REQUIRE_CUDA();
  // K = 5/67 (no vector path), 48/1032 (16-byte rows for every dtype), 300 (f32 vectors only); N = 1 and small N
  // with K = 4104 split K across the warps of a CTA.
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16})
    run_dense(dt, {{1, 16}, {7, 5}, {33, 67}, {257, 48}, {65, 300}, {130, 1032}, {3, 4104}}, kRowCounts,
              static_cast<uint32_t>(dt) + 10);
}

TEST(CudaLinear, DenseStridedWeightRows) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(7);
  // Weight rows padded to 48 elements: 16-byte aligned for bf16/f16/f32 with K = 45, so the vector path runs and the
  // last partial vector of each row is read element by element.
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    const int64_t N = 19, K = 45, ws = 48;
    HostTensor w = random_tensor({N, K}, rng, -1.0f, 1.0f, dt);
    DeviceTensor wd = device_alloc(dt, {N, K}, {ws, 1});
    gpu().copy(wd.t, w.view());
    for (int64_t M : {1, 4, 8, 20}) {
      HostRows x(M, K, K);
      fill_random(x, rng, -1.0f, 1.0f);
      check_linear_case(gpu(), cpu_oracle(), {M, N, K, true, false}, x, w.view(), wd.t, w.values, rng,
                        std::string(dtype_name(dt)) + " strided w");
    }
  }
}

// ---- nvfp4 ----

// The packed entry uploaded whole (codes, scales, trailer) as raw bytes; the returned view points at its codes.
struct DeviceNvfp4 {
  DeviceTensor raw;
  Tensor view;
};
DeviceNvfp4 upload_nvfp4(nvfp4_test::PackedWeight& p) {
  DeviceNvfp4 d;
  const int64_t bytes = static_cast<int64_t>(p.bytes.size());
  d.raw = device_alloc(DType::kI8, {bytes});
  gpu().copy(d.raw.t, Tensor::make(p.bytes.data(), DType::kI8, {bytes}));
  d.view = Tensor::make(d.raw.t.data, DType::kNVFP4, {p.N, p.K}, Device::kCuda);
  return d;
}

Backend& cpu_with(Nvfp4Activations mode) {
  static std::unique_ptr<Backend> a4 = make_cpu_backend({.threads = 2, .nvfp4_activations = Nvfp4Activations::kNvfp4});
  static std::unique_ptr<Backend> a16 = make_cpu_backend({.threads = 2, .nvfp4_activations = Nvfp4Activations::kFloat});
  return mode == Nvfp4Activations::kNvfp4 ? *a4 : *a16;
}
// The CUDA backend in W4A16 mode (same device; tensors from gpu() are usable once gpu() has synchronized).
Backend& gpu_with(Nvfp4Activations mode) {
  if (mode == Nvfp4Activations::kNvfp4) return gpu();
  static std::unique_ptr<Backend> a16 = make_cuda_backend({.device = 0, .nvfp4_activations = Nvfp4Activations::kFloat});
  return *a16;
}

// Activation rows for the nvfp4 tests: random rows with zero / tiny blocks and outliers (activation_rows), and when
// `special`, rows 0..3 replaced by a zero row, a NaN row, an Inf row and a denormal row.
HostRows nvfp4_rows(int64_t M, int64_t K, int64_t stride, uint32_t seed, bool special) {
  HostRows x(M, K, stride);
  const auto v = nvfp4_test::activation_rows(M, K, seed);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) x.at(m, k) = v[static_cast<size_t>(m * K + k)];
  if (special) {
    for (int64_t k = 0; k < K; ++k) {
      if (M > 0) x.at(0, k) = 0.0f;
      if (M > 1 && k == K / 2) x.at(1, k) = std::numeric_limits<float>::quiet_NaN();
      if (M > 2 && k == 0) x.at(2, k) = -std::numeric_limits<float>::infinity();
      if (M > 3) x.at(3, k) *= 1e-40f;
    }
  }
  return x;
}

void run_nvfp4(Nvfp4Activations mode, const std::vector<std::pair<int64_t, int64_t>>& nks,
               const std::vector<int64_t>& ms, float input_scale, uint32_t seed, Gemv gemv = Gemv::kBackend) {
  std::mt19937 rng(seed);
  const std::string what = std::string(mode == Nvfp4Activations::kNvfp4 ? "w4a4" : "w4a16") + gemv_name(gemv);
  for (auto [N, K] : nks) {
    auto w = nvfp4_test::pack(nvfp4_test::random_values(N * K, seed + static_cast<uint32_t>(N * K), 0.02f, true, K),
                              N, K);
    if (input_scale > 0.0f) w.set_input_scale(input_scale);
    DeviceNvfp4 wd = upload_nvfp4(w);
    for (int64_t M : ms)
      for (int variant = 0; variant < 3; ++variant) {
        const LinearCase c{M, N, K, variant == 1, variant != 0};
        HostRows x = nvfp4_rows(M, K, c.strided ? K + 3 : K, seed + static_cast<uint32_t>(M), variant == 2);
        check_linear_case(gpu_with(mode), cpu_with(mode), c, x, w.view(), wd.view, w.dequant, rng,
                          what + (input_scale > 0.0f ? " static scale" : ""), gemv);
      }
  }
}

// W4A4 shapes: K % 32 != 0 (the streaming kernels fall back to the tiled GEMV), and K % 32 == 0 with N not a multiple
// of the 4 rows of a warp, chunk tails, and K split over 2 (K 1056, 4096, 5120) and 8 (K 16384) warps of a CTA.
TEST(CudaLinear, Nvfp4W4A4Small) {
  NINFER_REQUIRE_CUDA();
  for (Gemv g : kW4a4Variants)
    run_nvfp4(Nvfp4Activations::kNvfp4, {{1, 16}, {7, 48}, {6, 96}}, {1, 2, 3, 8, 9}, 0.0f, 1, g);
}

TEST(CudaLinear, Nvfp4W4A16Small) {
  NINFER_REQUIRE_CUDA();
  run_nvfp4(Nvfp4Activations::kFloat, {{1, 16}, {7, 48}}, {1, 3, 9}, 0.0f, 2);
}

TEST(CudaLinear, Nvfp4W4A4EveryRowCount) {
  NINFER_REQUIRE_CUDA();
  for (Gemv g : kW4a4Variants) {
    run_nvfp4(Nvfp4Activations::kNvfp4, {{1, 16}, {7, 48}, {33, 80}, {257, 272}, {5, 4096}, {6, 96}, {67, 1056}},
              kGemvRowCounts, 0.0f, 3, g);
    run_nvfp4(Nvfp4Activations::kNvfp4, {{130, 5120}, {3, 16384}}, kDecodeRowCounts, 0.0f, 6, g);
  }
}

TEST(CudaLinear, Nvfp4W4A4CheckpointInputScale) {
  NINFER_REQUIRE_CUDA();
  for (Gemv g : kW4a4Variants)
    run_nvfp4(Nvfp4Activations::kNvfp4, {{33, 80}, {257, 272}, {64, 512}}, {1, 2, 5, 8, 17}, 0.01f, 4, g);
}

TEST(CudaLinear, Nvfp4W4A16EveryRowCount) {
  NINFER_REQUIRE_CUDA();
  run_nvfp4(Nvfp4Activations::kFloat, {{1, 16}, {7, 48}, {33, 80}, {257, 272}, {5, 4096}}, kRowCounts, 0.0f, 5);
}

#if defined(NINFER_WITH_CUDA)
// The GPU quantizer writes the bytes nvfp4_quantize_row writes (codes, E4M3 scales) and the same global scale, on the
// CPU test's adversarial rows (ties, zeros, outliers, denormal scales, 0/0 quotients, NaN/Inf), static and dynamic.
// Both quantizers (kern::W4a4Gemv: one CTA per row; several CTAs per row) on the same rows.
void check_quantizer(int64_t K, int64_t extra_stride, const std::vector<float>& scales) {
  const auto rows = nvfp4_test::adversarial_rows(K, static_cast<uint32_t>(K));
  const int64_t M = static_cast<int64_t>(rows.size());
  HostRows x(M, K, K + extra_stride);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) x.at(m, k) = rows[static_cast<size_t>(m)][static_cast<size_t>(k)];
  DeviceTensor xd = upload_rows(x);
  for (kern::W4a4Gemv quantizer : {kern::W4a4Gemv::kTiled, kern::W4a4Gemv::kStream}) {
    for (float input_scale : scales) {
      SCOPED_TRACE("K=" + std::to_string(K) + " input_scale " + std::to_string(input_scale) +
                   (quantizer == kern::W4a4Gemv::kTiled ? " tiled" : " stream"));
      const cuda::Nvfp4QuantizedRows got = cuda::nvfp4_quantize_rows(gpu(), xd.t, input_scale, quantizer);
      ASSERT_EQ(got.codes.size(), static_cast<size_t>(M * K / 2));
      for (int64_t m = 0; m < M; ++m) {
        std::vector<uint8_t> codes(static_cast<size_t>(K / 2)), sc(static_cast<size_t>(K / 16));
        const float g = cpu::nvfp4_quantize_row(&x.at(m, 0), K, input_scale, codes.data(), sc.data());
        const float gg = got.global[static_cast<size_t>(m)];
        EXPECT_TRUE(std::isnan(g) ? std::isnan(gg) : std::memcmp(&g, &gg, sizeof(float)) == 0)
            << "row " << m << " g " << gg << " vs " << g;
        for (int64_t j = 0; j < K / 2; ++j)
          if (codes[static_cast<size_t>(j)] != got.codes[static_cast<size_t>(m * K / 2 + j)]) {
            ADD_FAILURE() << "row " << m << " code byte " << j << ": "
                          << int(got.codes[static_cast<size_t>(m * K / 2 + j)])
                          << " != " << int(codes[static_cast<size_t>(j)]);
            break;
          }
        for (int64_t b = 0; b < K / 16; ++b)
          if (sc[static_cast<size_t>(b)] != got.scales[static_cast<size_t>(m * K / 16 + b)]) {
            ADD_FAILURE() << "row " << m << " scale " << b << ": "
                          << int(got.scales[static_cast<size_t>(m * K / 16 + b)])
                          << " != " << int(sc[static_cast<size_t>(b)]);
            break;
          }
      }
    }
  }
}
#endif

TEST(CudaLinear, Nvfp4QuantizerSmallIsBitExact) {
  NINFER_REQUIRE_CUDA();
#if defined(NINFER_WITH_CUDA)
  check_quantizer(16, 0, {0.0f, 0.5f});
  check_quantizer(48, 3, {0.0f, 1e-30f});
#endif
}

TEST(CudaLinear, Nvfp4QuantizerIsBitExactWithTheCpu) {
  NINFER_REQUIRE_CUDA();
#if defined(NINFER_WITH_CUDA)
  for (int64_t K : {16, 32, 48, 272, 1024, 3584, 17408})
    check_quantizer(K, K % 32 == 0 ? 16 : 1, {0.0f, 0.5f, 0.05f, 1e-4f, 1e-30f, 1e30f});
#endif
}

// ---- argument errors (the CPU op's, through the shared linear_checks) ----

template <typename F>
void expect_error(F&& f, ErrorKind kind, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected an error mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(CudaLinear, RejectsWhatTheCpuRejects) {
  NINFER_REQUIRE_CUDA();
  DeviceTensor x = device_alloc(DType::kF32, {2, 32});
  DeviceTensor y = device_alloc(DType::kF32, {2, 8});
  DeviceTensor w = device_alloc(DType::kBF16, {8, 32});
  DeviceTensor w9 = device_alloc(DType::kBF16, {9, 32});
  DeviceTensor wi = device_alloc(DType::kI8, {8, 32});
  DeviceTensor sq = device_alloc(DType::kF32, {2, 2});
  DeviceTensor wsq = device_alloc(DType::kF32, {2, 2});
  expect_error([&] { gpu().linear(y.t, x.t, w9.t); }, ErrorKind::kInvalidArgument, "shape mismatch");
  expect_error([&] { gpu().linear(sq.t, sq.t, wsq.t); }, ErrorKind::kInvalidArgument, "alias");
  expect_error([&] { gpu().linear(y.t, x.t, wi.t); }, ErrorKind::kUnsupported, "linear");
  std::vector<float> hx(64);
  expect_error([&] { gpu().linear(y.t, Tensor::make(hx.data(), DType::kF32, {2, 32}), w.t); },
               ErrorKind::kInvalidArgument, "not a cuda tensor");
  // nvfp4: K not a multiple of 16, an entry not at a 16-byte boundary.
  DeviceTensor raw = device_alloc(DType::kI8, {4096});
  Tensor bad = Tensor::make(raw.t.data, DType::kNVFP4, {8, 30}, Device::kCuda);
  DeviceTensor x30 = device_alloc(DType::kF32, {2, 30});
  expect_error([&] { gpu().linear(y.t, x30.t, bad); }, ErrorKind::kInvalidArgument, "K % 16");
  Tensor shifted = Tensor::make(static_cast<uint8_t*>(raw.t.data) + 8, DType::kNVFP4, {8, 32}, Device::kCuda);
  expect_error([&] { gpu().linear(y.t, x.t, shifted); }, ErrorKind::kInvalidArgument, "16-byte aligned");
  // Empty outputs are no-ops, as on the CPU.
  DeviceTensor y0 = device_alloc(DType::kF32, {0, 8});
  DeviceTensor x0 = device_alloc(DType::kF32, {0, 32});
  gpu().linear(y0.t, x0.t, w.t);
  gpu().synchronize();
}

}  // namespace
}  // namespace ninfer::testing
