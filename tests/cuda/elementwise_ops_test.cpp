// The CUDA elementwise family against the CPU oracle: rms_norm (both offsets, every weight dtype, warp and block
// rows, the forward's strided per-head q view in place), add_rms_norm, gated_rms_norm, l2_norm, add / silu_mul / sigmoid_mul
// (strided gate, in place), partial RoPE at long positions, embedding and gather_rows (bit-exact), argmax_rows (the
// same indices, NaN / -inf / ties planted), max_rows and top_k_rows (the same pairs), and the argument
// errors, which must be the CPU op's own.
//
// Tolerances (|got − want| <= atol + rtol·|want|, want = the CPU op):
//   norms (Σx² in double on both sides)      atol 1e-7, rtol 1e-6
//   silu_mul, sigmoid_mul (expf ≤ 2 ulp)     atol 1e-7, rtol 1e-6
//   rope (same f32 angle, cos/sin in double) atol 4e-7, rtol 1e-6
//   add, embedding, gather_rows              bit-exact
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "tests/cuda/cuda_test_support.h"

namespace ninfer::testing {
namespace {

constexpr double kNormAtol = 1e-7, kNormRtol = 1e-6;
constexpr double kActAtol = 1e-7, kActRtol = 1e-6;
constexpr double kRopeAtol = 4e-7, kRopeRtol = 1e-6;

// A host tensor and its device copy (contiguous, or with the strides given).
struct Both {
  HostTensor h;
  DeviceTensor d;
  explicit Both(HostTensor host, std::vector<int64_t> strides = {}) : h(std::move(host)) {
    d = device_alloc(h.dtype, h.shape, std::move(strides));
    gpu().copy(d.t, h.view());
  }
  // The host view (for the CPU oracle) or the device view (for the CUDA op).
  Tensor t(bool on_gpu) { return on_gpu ? d.t : h.view(); }
  std::vector<float> gpu_values() const { return to_host_f32(d.t); }
};

// Runs op on the CPU oracle with the host views (on_gpu = false) and on the CUDA backend with the device views, then
// compares `out` (device values against the oracle's host values).
::testing::AssertionResult run_both(const std::function<void(Backend&, bool)>& op, Both& out, double atol,
                                    double rtol) {
  op(cpu_oracle(), false);
  op(gpu(), true);
  return all_close(out.gpu_values(), out.h.values, atol, rtol);
}

std::string with_cpu_names(std::string s) {
  for (size_t p; (p = s.find("cuda")) != std::string::npos;) s.replace(p, 4, "cpu");
  return s;
}

// call(backend, on_gpu) must throw the same Error (kind and message, device names aside) on both backends.
void expect_same_error(const std::string& what, const std::function<void(Backend&, bool)>& call) {
  std::string cpu_msg, gpu_msg;
  ErrorKind cpu_kind = ErrorKind::kInternal, gpu_kind = ErrorKind::kInternal;
  try {
    call(cpu_oracle(), false);
    ADD_FAILURE() << what << ": the CPU op accepted it";
    return;
  } catch (const Error& e) {
    cpu_msg = e.what();
    cpu_kind = e.kind();
  }
  try {
    call(gpu(), true);
    ADD_FAILURE() << what << ": the CUDA op accepted it (CPU: " << cpu_msg << ")";
    return;
  } catch (const Error& e) {
    gpu_msg = e.what();
    gpu_kind = e.kind();
  }
  EXPECT_EQ(gpu_kind, cpu_kind) << what << ": " << gpu_msg;
  EXPECT_EQ(with_cpu_names(gpu_msg), cpu_msg) << what;
}

HostTensor random_weight(int64_t n, std::mt19937& rng, DType dt, float lo = -1.0f, float hi = 1.0f) {
  return random_tensor({n}, rng, lo, hi, dt);
}

const DType kWeightTypes[] = {DType::kF32, DType::kBF16, DType::kF16};

// ---- rms_norm ----

void check_rms_norm(int64_t rows, int64_t n, DType wt, float off, std::mt19937& rng) {
  Both x(random_tensor({rows, n}, rng, -3, 3));
  Both w(random_weight(n, rng, wt, off == 1.0f ? -0.5f : 0.5f, off == 1.0f ? 0.5f : 1.5f));
  Both y(HostTensor({rows, n}));
  EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.rms_norm(y.t(g), x.t(g), w.t(g), 1e-6f, off); }, y, kNormAtol, kNormRtol))
      << "rms_norm [" << rows << ", " << n << "] w " << dtype_name(wt) << " offset " << off;
  // in place
  EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.rms_norm(x.t(g), x.t(g), w.t(g), 1e-6f, off); }, x, kNormAtol, kNormRtol))
      << "rms_norm in place [" << rows << ", " << n << "] w " << dtype_name(wt) << " offset " << off;
}

TEST(CudaElementwise, RmsNormSmallEveryWeightDtype) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(11);
  for (DType wt : kWeightTypes)
    for (float off : {0.0f, 1.0f})
      for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 7}, {5, 40}, {3, 128}, {9, 33}})
        check_rms_norm(rows, n, wt, off, rng);
}

TEST(CudaElementwise, RmsNormWarpAndBlockRows) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(12);
  // warp per row (n <= 1024) at row counts around the 4 rows of a block; block per row above, aligned or not.
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 1024}, {4, 256}, {5, 256}, {1000, 128}, {1, 1025}, {3, 5120},
                         {130, 5120}, {2, 4099}, {1, 17408}})
    check_rms_norm(rows, n, rows % 2 ? DType::kBF16 : DType::kF32, 1.0f, rng);
}

// The forward's q norm: rms_norm in place on the query half of each head of q_proj's [T, nh·2·hd] output, viewed
// as [T, nh, hd] with strides {nh·2·hd, 2·hd, 1}; the gate halves must come back untouched.
TEST(CudaElementwise, RmsNormInPlaceOnStridedQueryHeads) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(13);
  for (int64_t hd : {128, 256}) {
    const int64_t T = 5, nh = 3;
    Both qp(random_tensor({T, nh * 2 * hd}, rng, -2, 2));
    Both w(random_weight(hd, rng, DType::kBF16, -0.3f, 0.3f));
    auto qview = [&](bool on_gpu) {
      return Tensor::strided(qp.t(on_gpu).data, DType::kF32, {T, nh, hd}, {nh * 2 * hd, 2 * hd, 1},
                             on_gpu ? Device::kCuda : Device::kCpu);
    };
    EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.rms_norm(qview(g), qview(g), w.t(g), 1e-6f, 1.0f); }, qp, kNormAtol, kNormRtol)) << "strided q heads, hd " << hd;
    // and the k norm on a contiguous [T, n_kv, hd]
    Both k(random_tensor({T, 2, hd}, rng, -2, 2));
    EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.rms_norm(k.t(g), k.t(g), w.t(g), 1e-6f, 1.0f); }, k, kNormAtol, kNormRtol)) << "k heads, hd " << hd;
  }
}

// Rows whose starts are not 16-byte aligned (odd row stride on the device) take the scalar path.
TEST(CudaElementwise, RmsNormUnalignedRowsSmall) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(14);
  for (int64_t n : {64, 2048}) {
    Both x(random_tensor({6, n}, rng, -1, 1), {n + 3, 1});
    Both w(random_weight(n, rng, DType::kF16));
    Both y(HostTensor({6, n}), {n + 1, 1});
    EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.rms_norm(y.t(g), x.t(g), w.t(g), 1e-5f, 0.0f); }, y, kNormAtol, kNormRtol)) << "unaligned rows, n " << n;
  }
}

// add_rms_norm: the sum written back to x is exact (bit-exact with the CPU op), y within the norm tolerance; warp
// and block rows, aligned and unaligned, y = delta (the CPU op's own test checks it equals add then rms_norm).
TEST(CudaElementwise, AddRmsNormSmall) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(16);
  for (DType wt : kWeightTypes)
    for (auto [rows, n, pad] : {std::tuple<int64_t, int64_t, int64_t>{1, 7, 0}, {5, 256, 0}, {3, 5120, 0},
                                {2, 4099, 0}, {4, 1024, 3}, {6, 2048, 1}}) {
      for (bool y_is_delta : {false, true}) {
        Both x(random_tensor({rows, n}, rng, -3, 3), pad ? std::vector<int64_t>{n + pad, 1} : std::vector<int64_t>{});
        Both d(random_tensor({rows, n}, rng, -3, 3));
        Both w(random_weight(n, rng, wt, -0.5f, 0.5f));
        Both y(HostTensor({rows, n}));
        Both& out = y_is_delta ? d : y;
        EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.add_rms_norm(x.t(g), out.t(g), d.t(g), w.t(g), 1e-6f, 1.0f); },
                             out, kNormAtol, kNormRtol))
            << "add_rms_norm [" << rows << ", " << n << "] w " << dtype_name(wt) << " pad " << pad << " y is delta "
            << y_is_delta;
        EXPECT_EQ(x.gpu_values(), x.h.values) << "add_rms_norm's sum [" << rows << ", " << n << "]";
      }
    }
}

TEST(CudaElementwise, ZeroRowsAreANoOpSmall) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(15);
  Both x(random_tensor({3, 16}, rng));
  Both w(random_weight(16, rng, DType::kF32));
  const Tensor none = x.t(true).slice0(0, 0);
  gpu().rms_norm(none, none, w.t(true), 1e-6f, 1.0f);
  gpu().add_rms_norm(none, x.t(true).slice0(1, 1), none, w.t(true), 1e-6f, 1.0f);
  gpu().gated_rms_norm(none, none, none, w.t(true), 1e-6f);
  gpu().l2_norm(none, none, 1e-6f, 1.0f);
  gpu().add(none, none, none);
  gpu().silu_mul(none, none, none);
  gpu().sigmoid_mul(none, none, none);
  gpu().embedding(none, w.t(true).reshape({1, 16}), {});
  gpu().gather_rows(none, x.t(true), {});
  gpu().synchronize();
  EXPECT_EQ(x.gpu_values(), x.h.values);
}

// ---- gated_rms_norm, l2_norm ----

TEST(CudaElementwise, GatedRmsNormSmall) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(21);
  for (DType wt : kWeightTypes)
    for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 7}, {6, 128}, {3, 1536}, {2, 1027}}) {
      Both x(random_tensor({rows, n}, rng, -2, 2));
      Both z(random_tensor({rows, n}, rng, -8, 8));
      Both w(random_weight(n, rng, wt, 0.5f, 1.5f));
      Both y(HostTensor({rows, n}));
      EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.gated_rms_norm(y.t(g), x.t(g), z.t(g), w.t(g), 1e-6f); }, y, kNormAtol, kNormRtol))
          << "gated_rms_norm [" << rows << ", " << n << "] w " << dtype_name(wt);
      EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.gated_rms_norm(x.t(g), x.t(g), z.t(g), w.t(g), 1e-6f); }, x,
                           kNormAtol, kNormRtol))
          << "gated_rms_norm in place";
    }
}

// The GDN per-head view: gated norm over [T, nv, dv] heads of a strided z (z_proj columns inside a wider row).
TEST(CudaElementwise, GatedRmsNormStridedGate) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(22);
  const int64_t T = 4, nv = 6, dv = 128;
  Both x(random_tensor({T, nv, dv}, rng, -2, 2));
  Both z(random_tensor({T, nv, dv}, rng, -6, 6), {nv * dv + 64, dv, 1});
  Both w(random_weight(dv, rng, DType::kBF16, 0.5f, 1.5f));
  EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.gated_rms_norm(x.t(g), x.t(g), z.t(g), w.t(g), 1e-6f); }, x, kNormAtol, kNormRtol));
}

// GDN q/k l2norm on the conv output's [T, nk, dk] views (strides {conv_dim, dk, 1}), in place, q scaled by dk^-½.
TEST(CudaElementwise, L2NormOnStridedHeadsSmall) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(23);
  for (int64_t dk : {128, 40}) {
    const int64_t T = 7, nk = 4, conv_dim = 2 * nk * dk + 3 * dk;
    Both conv(random_tensor({T, conv_dim}, rng, -2, 2));
    for (int part = 0; part < 2; ++part) {
      const float scale = part == 0 ? 1.0f / std::sqrt(float(dk)) : 1.0f;
      auto view = [&](bool on_gpu) {
        float* base = static_cast<float*>(conv.t(on_gpu).data) + part * nk * dk;
        return Tensor::strided(base, DType::kF32, {T, nk, dk}, {conv_dim, dk, 1}, on_gpu ? Device::kCuda : Device::kCpu);
      };
      cpu_oracle().l2_norm(view(false), view(false), 1e-6f, scale);
      gpu().l2_norm(view(true), view(true), 1e-6f, scale);
    }
    EXPECT_TRUE(all_close(conv.gpu_values(), conv.h.values, kNormAtol, kNormRtol)) << "l2_norm dk " << dk;
  }
  // large rows (block per row) into a separate output
  Both x(random_tensor({3, 4100}, rng, -2, 2));
  Both y(HostTensor({3, 4100}));
  EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.l2_norm(y.t(g), x.t(g), 1e-6f, 0.5f); }, y, kNormAtol, kNormRtol)) << "l2_norm [3, 4100]";
}

// ---- add, silu_mul, sigmoid_mul ----

enum class Binary { kAdd, kSiluMul, kSigmoidMul };
void run_binary(Backend& be, Binary op, const Tensor& y, const Tensor& a, const Tensor& b) {
  if (op == Binary::kAdd) be.add(y, a, b);
  if (op == Binary::kSiluMul) be.silu_mul(y, a, b);
  if (op == Binary::kSigmoidMul) be.sigmoid_mul(y, a, b);
}
void expect_binary(Binary op, const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  if (op == Binary::kAdd)
    EXPECT_EQ(got, want) << what << " (add is exact)";
  else
    EXPECT_TRUE(all_close(got, want, kActAtol, kActRtol)) << what;
}

TEST(CudaElementwise, BinaryOpsSmall) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(31);
  for (Binary op : {Binary::kAdd, Binary::kSiluMul, Binary::kSigmoidMul})
    for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 7}, {3, 33}, {16, 128}, {2, 5120}, {3, 17408}, {1, 1}}) {
      const std::string what = "op " + std::to_string(int(op)) + " [" + std::to_string(rows) + ", " + std::to_string(n) + "]";
      Both a(random_tensor({rows, n}, rng, -12, 12));
      Both b(random_tensor({rows, n}, rng, -12, 12));
      Both y(HostTensor({rows, n}));
      run_binary(cpu_oracle(), op, y.t(false), a.t(false), b.t(false));
      run_binary(gpu(), op, y.t(true), a.t(true), b.t(true));
      expect_binary(op, y.gpu_values(), y.h.values, what);
      // in place into either operand
      run_binary(cpu_oracle(), op, b.t(false), a.t(false), b.t(false));
      run_binary(gpu(), op, b.t(true), a.t(true), b.t(true));
      expect_binary(op, b.gpu_values(), b.h.values, what + " y = b");
      run_binary(cpu_oracle(), op, a.t(false), a.t(false), b.t(false));
      run_binary(gpu(), op, a.t(true), a.t(true), b.t(true));
      expect_binary(op, a.gpu_values(), a.h.values, what + " y = a");
    }
}

// The attention output gate: attn [T, nh, hd] · sigmoid(gate), the gate being the second half of each head of
// q_proj's rows (strides {row, 2·hd, 1}, offset hd: the float4 path); also one element further (the scalar path).
TEST(CudaElementwise, SigmoidMulStridedGateSmall) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(32);
  for (int64_t offset_extra : {0, 1}) {
    const int64_t T = 6, nh = 4, hd = 256;
    const int64_t W = nh * 2 * hd + 4;  // a padded q_proj row
    Both qp(random_tensor({T, W}, rng, -6, 6));
    Both attn(random_tensor({T, nh, hd}, rng, -2, 2));
    auto gate = [&](bool on_gpu) {
      float* base = static_cast<float*>(qp.t(on_gpu).data) + hd + offset_extra;
      return Tensor::strided(base, DType::kF32, {T, nh, hd}, {W, 2 * hd, 1},
                             on_gpu ? Device::kCuda : Device::kCpu);
    };
    EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.sigmoid_mul(attn.t(g), attn.t(g), gate(g)); }, attn, kActAtol, kActRtol)) << "gate offset +" << offset_extra;
  }
}

// ---- rope ----

std::vector<int32_t> long_positions(int64_t T, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> dist(0, 196608);
  std::vector<int32_t> p(static_cast<size_t>(T));
  for (auto& v : p) v = dist(rng);
  p[0] = 0;
  if (T > 1) p[1] = 196608;
  if (T > 2) p[2] = 196607;
  return p;
}

void check_rope(int64_t T, int64_t heads, int64_t hd, int64_t rotary_dim, double theta, bool strided_q,
                std::mt19937& rng) {
  const std::vector<int32_t> pos = long_positions(T, rng);
  const std::string what = "rope T " + std::to_string(T) + " heads " + std::to_string(heads) + " hd " +
                           std::to_string(hd) + " rotary " + std::to_string(rotary_dim) +
                           (strided_q ? " strided q" : "");
  if (strided_q) {
    Both qp(random_tensor({T, heads * 2 * hd}, rng, -2, 2));
    auto qview = [&](bool on_gpu) {
      return Tensor::strided(qp.t(on_gpu).data, DType::kF32, {T, heads, hd}, {heads * 2 * hd, 2 * hd, 1},
                             on_gpu ? Device::kCuda : Device::kCpu);
    };
    EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.rope(qview(g), pos, rotary_dim, theta); }, qp, kRopeAtol, kRopeRtol)) << what;
  } else {
    Both x(random_tensor({T, heads, hd}, rng, -2, 2));
    EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.rope(x.t(g), pos, rotary_dim, theta); }, x, kRopeAtol, kRopeRtol)) << what;
  }
}

TEST(CudaElementwise, RopePartialRotaryLongPositionsSmall) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(41);
  check_rope(9, 3, 256, 64, 1e7, true, rng);   // Qwen3.5 q: partial rotary 0.25 on the strided q view
  check_rope(9, 2, 256, 64, 1e7, false, rng);  // Qwen3.5 k
  check_rope(5, 3, 10, 6, 1e4, false, rng);    // odd half, rotary < head_dim
}

TEST(CudaElementwise, RopeFullAndWideRotary) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(42);
  check_rope(33, 16, 128, 128, 1e6, true, rng);   // Qwen3: full rotary
  check_rope(4, 2, 512, 512, 1e7, false, rng);    // half 256: two frequency chunks per token
  check_rope(3, 1, 640, 600, 5e5, false, rng);    // half 300: a partial last chunk
  check_rope(300, 24, 256, 64, 1e7, true, rng);   // a prefill-sized batch
}

// Twice the same rope (the q and the k of a layer) reuses the host table and still matches.
TEST(CudaElementwise, RopeRepeatedCallsSmall) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(43);
  const std::vector<int32_t> pos = long_positions(4, rng);
  Both x(random_tensor({4, 2, 64}, rng, -2, 2));
  for (int i = 0; i < 3; ++i) {
    cpu_oracle().rope(x.t(false), pos, 32, 1e7);
    gpu().rope(x.t(true), pos, 32, 1e7);
  }
  EXPECT_TRUE(all_close(x.gpu_values(), x.h.values, 3 * kRopeAtol, 3 * kRopeRtol));
}

// ---- embedding, gather_rows ----

TEST(CudaElementwise, EmbeddingEveryTableDtypeSmall) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(51);
  for (DType dt : kWeightTypes)
    for (int64_t H : {7, 64, 5120}) {
      const int64_t V = 37;
      Both table(random_tensor({V, H}, rng, -3, 3, dt));
      const std::vector<int32_t> ids = {0, 36, 5, 5, 17, 0, 36};
      Both y(HostTensor({static_cast<int64_t>(ids.size()), H}));
      EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.embedding(y.t(g), table.t(g), ids); }, y, 0, 0)) << "embedding " << dtype_name(dt) << " H " << H;  // bit-exact
    }
}

// A table with padded rows and an output with padded rows (the unaligned path).
TEST(CudaElementwise, EmbeddingStridedRowsSmall) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(52);
  const int64_t V = 11, H = 24;
  Both table(random_tensor({V, H}, rng, -3, 3, DType::kBF16), {H + 3, 1});
  Both y(HostTensor({4, H}), {H + 5, 1});
  const std::vector<int32_t> ids = {10, 0, 3, 10};
  EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.embedding(y.t(g), table.t(g), ids); }, y, 0, 0));  // bit-exact
}

TEST(CudaElementwise, GatherRowsSmall) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(53);
  for (int64_t N : {5, 1024, 4099}) {
    Both x(random_tensor({9, N}, rng, -3, 3), {N + 4, 1});
    const std::vector<int32_t> rows = {8, 0, 4, 4};
    Both y(HostTensor({4, N}));
    EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.gather_rows(y.t(g), x.t(g), rows); }, y, 0, 0)) << "gather_rows N " << N;  // bit-exact
  }
}

// ---- argmax_rows: the CPU op's indices exactly ----

TEST(CudaElementwise, ArgmaxRowsEqualsCpu) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(57);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // Both vocabularies of the seed's family, a small odd one, one element; rows at a stride; coarse values (ties
  // across the block's threads and warps); NaN and -inf planted.
  for (int64_t V : {1, 17, 1025, 151936, 248320}) {
    const int64_t R = 9;
    HostTensor x = random_tensor({R, V}, rng, -4, 4);
    for (auto& v : x.values) v = std::round(v * 2) / 2;
    float* row = x.values.data();
    if (V > 3) {
      row[0 * V + 0] = nan;                                    // row 0: NaN first -> 0
      row[1 * V + 1] = nan, row[1 * V + V - 1] = 9;            // row 1: NaN elsewhere, max last
      std::fill(row + 2 * V, row + 3 * V, -inf);               // row 2: all masked -> 0
      row[3 * V + V / 2] = inf, row[3 * V + V - 2] = inf;      // row 3: the first of two +inf
      for (int64_t k = 0; k < V; ++k) row[4 * V + k] = nan;    // row 4: all NaN -> 0
      row[5 * V + V - 1] = 5, row[5 * V + 3] = 5;              // row 5: a tie far apart
    }
    Both xs(std::move(x), {V + 5, 1});
    std::vector<int32_t> want(R, -1), got(R, -1);
    cpu_oracle().argmax_rows(want, xs.t(false));
    gpu().argmax_rows(got, xs.t(true));
    EXPECT_EQ(got, want) << "V " << V;
  }
  std::vector<int32_t> none;
  Both empty(HostTensor({0, 8}));
  gpu().argmax_rows(none, empty.t(true));  // no rows: nothing to do
}

// ---- max_rows: the CPU op's pairs exactly (the vocabulary-parallel argmax's rank-local half) ----

TEST(CudaElementwise, MaxRowsEqualsCpu) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(59);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (int64_t V : {1, 17, 1025, 124160, 248320}) {  // 124,160: a TP2 share of the seed's vocabulary
    const int64_t R = 8;
    HostTensor x = random_tensor({R, V}, rng, -4, 4);
    for (auto& v : x.values) v = std::round(v * 2) / 2;  // coarse: ties across threads and warps
    float* row = x.values.data();
    if (V > 3) {
      row[0 * V + 0] = nan;                                    // row 0: NaN first (nan_first keeps it)
      row[1 * V + 1] = nan, row[1 * V + V - 1] = 9;            // row 1: NaN elsewhere, max last
      std::fill(row + 2 * V, row + 3 * V, -inf);               // row 2: all masked
      row[3 * V + V / 2] = inf, row[3 * V + V - 2] = inf;      // row 3: the first of two +inf
      for (int64_t k = 0; k < V; ++k) row[4 * V + k] = nan;    // row 4: all NaN: (NaN, -1), or (NaN, 0)
      row[5 * V + V - 1] = 5, row[5 * V + 3] = 5;              // row 5: a tie far apart
    }
    Both xs(std::move(x), {V + 5, 1});
    for (bool nan_first : {false, true}) {
      Both best(HostTensor({R, 2}));
      cpu_oracle().max_rows(best.h.view(), xs.t(false), nan_first);
      gpu().max_rows(best.t(true), xs.t(true), nan_first);
      const std::vector<float> got = best.gpu_values();
      for (size_t i = 0; i < got.size(); ++i) {
        const float want = best.h.values[i];
        if (std::isnan(want)) EXPECT_TRUE(std::isnan(got[i])) << "V " << V << " nan_first " << nan_first << " at " << i;
        else EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want))
            << "V " << V << " nan_first " << nan_first << " at " << i << ": " << got[i] << " vs " << want;
      }
    }
  }
  Both x(HostTensor({2, 4}));
  Both wrong(HostTensor({2, 3}));
  expect_same_error("max_rows best shape", [&](Backend& be, bool g) { be.max_rows(wrong.t(g), x.t(g), false); });
}

// ---- top_k_rows: the CPU op's pairs exactly (a sampled step's candidates, one rank's share under TP) ----

TEST(CudaElementwise, TopKRowsEqualsCpu) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(61);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (int64_t V : {1, 17, 300, 1025, 124160, 248320}) {
    const int64_t R = 7;
    HostTensor x = random_tensor({R, V}, rng, -4, 4);
    for (auto& v : x.values) v = std::round(v * 2) / 2;  // coarse: ties across threads, warps and list ends
    float* row = x.values.data();
    if (V > 3) {
      row[0 * V + 0] = nan, row[0 * V + V - 1] = nan;      // row 0: NaN after every number
      std::fill(row + 1 * V, row + 2 * V, -inf);            // row 1: all masked
      row[1 * V + V - 1] = 1;
      row[2 * V + V / 2] = inf, row[2 * V + 1] = inf;       // row 2: two +inf
      for (int64_t k = 0; k < V; ++k) row[3 * V + k] = nan;  // row 3: NaN only
      std::fill(row + 4 * V, row + 5 * V, 0.5f);            // row 4: one value everywhere: the first k ids
      for (int64_t k = 0; k < V; ++k) row[5 * V + k] = static_cast<float>(k);  // row 5: ascending (every element inserts)
      row[6 * V + 2] = -0.0f, row[6 * V + 3] = 0.0f;        // row 6: -0 and +0 tie
    }
    Both xs(std::move(x), {V + 5, 1});
    for (int64_t k : {int64_t{1}, int64_t{7}, int64_t{20}, kTopKRowsMax}) {
      Both best(HostTensor({R, k, 2}));
      cpu_oracle().top_k_rows(best.h.view(), xs.t(false));
      gpu().top_k_rows(best.t(true), xs.t(true));
      const std::vector<float> got = best.gpu_values();
      for (size_t i = 0; i < got.size(); ++i) {
        const float want = best.h.values[i];
        if (std::isnan(want)) EXPECT_TRUE(std::isnan(got[i])) << "V " << V << " k " << k << " at " << i;
        else EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want))
            << "V " << V << " k " << k << " at " << i << ": " << got[i] << " vs " << want;
      }
    }
  }
  Both x(HostTensor({2, 4}));
  Both wrong(HostTensor({2, 3, 3}));
  expect_same_error("top_k_rows best shape", [&](Backend& be, bool g) { be.top_k_rows(wrong.t(g), x.t(g)); });
}

// ---- mask_columns: the CPU op's bits exactly ----

TEST(CudaElementwise, MaskColumnsEqualsCpu) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(58);
  for (int64_t V : {1, 300, 248320}) {
    const int64_t R = 5;
    HostTensor x = random_tensor({R, V}, rng, -4, 4);
    x.values[0] = std::numeric_limits<float>::quiet_NaN();
    std::vector<int8_t> allowed(static_cast<size_t>(V));
    for (auto& a : allowed) a = static_cast<int8_t>(rng() % 4 != 0);  // a quarter masked
    if (V > 1) allowed[0] = 0;                                          // the NaN column masked too
    Both xs(std::move(x), {V + 3, 1});
    const Tensor host_mask = Tensor::make(allowed.data(), DType::kI8, {V}, Device::kCpu);
    DeviceTensor dev_mask = to_device(host_mask);
    EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.mask_columns(xs.t(g), g ? dev_mask.t : host_mask); }, xs, 0, 0))
        << "mask_columns V " << V;  // bit-exact
  }
  Both x(HostTensor({2, 4}));
  std::vector<int8_t> three(3, 1);
  const Tensor host_short = Tensor::make(three.data(), DType::kI8, {3}, Device::kCpu);
  DeviceTensor dev_short = to_device(host_short);
  expect_same_error("mask_columns short mask",
                    [&](Backend& be, bool g) { be.mask_columns(x.t(g), g ? dev_short.t : host_short); });
}

// ---- edit_logits: the CPU op's bits exactly (the samplers' logit_bias and penalties on the device) ----

TEST(CudaElementwise, EditLogitsEqualsCpu) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(62);
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t V : {5, 300, 248320}) {
    const int64_t R = 4;
    HostTensor x = random_tensor({R, V}, rng, -4, 4);
    x.values[1] = -0.0f, x.values[2] = 0.0f, x.values[3] = -inf;
    std::vector<LogitEdit> edits;  // ~a third of every row's columns, every kind of part (and 20,000+ edits at 248,320)
    for (int32_t r = 0; r < R; ++r)
      for (int32_t c = 0; c < V; ++c) {
        if (c > 4 && rng() % 3 != 0) continue;
        LogitEdit e{.row = r, .col = c};
        if (rng() % 2) e.add = rng() % 5 == 0 ? -inf : static_cast<float>(static_cast<int>(rng() % 17) - 8) / 4;
        if (rng() % 2) e.scale = 0.5f + static_cast<float>(rng() % 7) / 5;
        if (rng() % 2) e.sub = 0.3f + 0.7f * static_cast<float>(rng() % 9);
        edits.push_back(e);
      }
    Both xs(std::move(x), {V + 3, 1});
    EXPECT_TRUE(run_both([&](Backend& be, bool g) { be.edit_logits(xs.t(g), edits); }, xs, 0, 0))
        << "edit_logits V " << V << ", " << edits.size() << " edits";  // bit-exact
  }
  Both x(HostTensor({2, 4}));
  const std::vector<LogitEdit> twice = {{.row = 0, .col = 1}, {.row = 0, .col = 1}};
  expect_same_error("edit_logits one element twice", [&](Backend& be, bool g) { be.edit_logits(x.t(g), twice); });
}

// ---- argument errors: the CPU op's own ----

TEST(CudaElementwise, NormErrorsMatchCpuSmall) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(61);
  Both x(random_tensor({3, 8}, rng));
  Both y(HostTensor({3, 8}));
  Both y_bad(HostTensor({3, 9}));
  Both w(random_weight(8, rng, DType::kF32));
  Both w_short(random_weight(7, rng, DType::kBF16));
  Both w_i8(HostTensor({8}, DType::kI8));
  Both x_bf16(random_tensor({3, 8}, rng, -1, 1, DType::kBF16));
  expect_same_error("rms_norm w length", [&](Backend& be, bool g) { be.rms_norm(y.t(g), x.t(g), w_short.t(g), 1e-6f, 1); });
  expect_same_error("rms_norm w i8", [&](Backend& be, bool g) { be.rms_norm(y.t(g), x.t(g), w_i8.t(g), 1e-6f, 1); });
  expect_same_error("rms_norm y shape", [&](Backend& be, bool g) { be.rms_norm(y_bad.t(g), x.t(g), w.t(g), 1e-6f, 0); });
  expect_same_error("rms_norm x bf16", [&](Backend& be, bool g) { be.rms_norm(y.t(g), x_bf16.t(g), w.t(g), 1e-6f, 0); });
  expect_same_error("add_rms_norm delta shape",
                    [&](Backend& be, bool g) { be.add_rms_norm(x.t(g), y.t(g), y_bad.t(g), w.t(g), 1e-6f, 1); });
  expect_same_error("add_rms_norm y is x",
                    [&](Backend& be, bool g) { be.add_rms_norm(x.t(g), x.t(g), y.t(g), w.t(g), 1e-6f, 1); });
  expect_same_error("gated_rms_norm z shape",
                    [&](Backend& be, bool g) { be.gated_rms_norm(y.t(g), x.t(g), y_bad.t(g), w.t(g), 1e-6f); });
  expect_same_error("gated_rms_norm w length",
                    [&](Backend& be, bool g) { be.gated_rms_norm(y.t(g), x.t(g), y.t(g), w_short.t(g), 1e-6f); });
  expect_same_error("l2_norm y shape", [&](Backend& be, bool g) { be.l2_norm(y_bad.t(g), x.t(g), 1e-6f, 1); });
  expect_same_error("add b shape", [&](Backend& be, bool g) { be.add(y.t(g), x.t(g), y_bad.t(g)); });
  expect_same_error("silu_mul y shape", [&](Backend& be, bool g) { be.silu_mul(y_bad.t(g), x.t(g), y.t(g)); });
  expect_same_error("sigmoid_mul a bf16", [&](Backend& be, bool g) { be.sigmoid_mul(y.t(g), x_bf16.t(g), x.t(g)); });
  // a host tensor handed to the CUDA op
  try {
    gpu().l2_norm(y.t(true), x.t(false), 1e-6f, 1.0f);
    ADD_FAILURE() << "l2_norm took a host x";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("l2_norm: x is not a cuda tensor"), std::string::npos) << e.what();
  }
}

TEST(CudaElementwise, RopeEmbeddingGatherErrorsMatchCpuSmall) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(62);
  Both x(random_tensor({3, 2, 8}, rng));
  Both x2(random_tensor({3, 16}, rng));
  const std::vector<int32_t> pos3 = {0, 1, 2}, pos2 = {0, 1};
  expect_same_error("rope 2-D x", [&](Backend& be, bool g) { be.rope(x2.t(g), pos3, 4, 1e4); });
  expect_same_error("rope positions", [&](Backend& be, bool g) { be.rope(x.t(g), pos2, 4, 1e4); });
  expect_same_error("rope odd rotary", [&](Backend& be, bool g) { be.rope(x.t(g), pos3, 5, 1e4); });
  expect_same_error("rope rotary > head_dim", [&](Backend& be, bool g) { be.rope(x.t(g), pos3, 10, 1e4); });
  expect_same_error("rope rotary 0", [&](Backend& be, bool g) { be.rope(x.t(g), pos3, 0, 1e4); });

  Both table(random_tensor({5, 16}, rng, -1, 1, DType::kF16));
  Both table_1d(random_tensor({16}, rng));
  Both table_i8(HostTensor({5, 16}, DType::kI8));
  Both y(HostTensor({3, 16}));
  const std::vector<int32_t> ids_hi = {0, 5, 1}, ids_neg = {0, -1, 1}, ids_ok = {4, 0, 1};
  expect_same_error("embedding id = V", [&](Backend& be, bool g) { be.embedding(y.t(g), table.t(g), ids_hi); });
  expect_same_error("embedding id < 0", [&](Backend& be, bool g) { be.embedding(y.t(g), table.t(g), ids_neg); });
  expect_same_error("embedding table 1-D", [&](Backend& be, bool g) { be.embedding(y.t(g), table_1d.t(g), ids_ok); });
  expect_same_error("embedding table i8", [&](Backend& be, bool g) { be.embedding(y.t(g), table_i8.t(g), ids_ok); });
  expect_same_error("embedding y rows", [&](Backend& be, bool g) { be.embedding(y.t(g), table.t(g), pos2); });
  // a refused id leaves y as it was
  EXPECT_EQ(y.gpu_values(), std::vector<float>(48, 0.0f));

  const std::vector<int32_t> rows_hi = {0, 3, 1}, rows_ok = {2, 0, 1};
  expect_same_error("gather_rows row = T", [&](Backend& be, bool g) { be.gather_rows(y.t(g), x2.t(g), rows_hi); });
  expect_same_error("gather_rows x 3-D", [&](Backend& be, bool g) { be.gather_rows(y.t(g), x.t(g), rows_ok); });
  std::vector<int32_t> ids2(2), ids3(3);
  expect_same_error("argmax_rows ids size", [&](Backend& be, bool g) { be.argmax_rows(ids2, x2.t(g)); });
  expect_same_error("argmax_rows x 3-D", [&](Backend& be, bool g) { be.argmax_rows(ids3, x.t(g)); });
  expect_same_error("gather_rows y rows", [&](Backend& be, bool g) { be.gather_rows(y.t(g), x2.t(g), pos2); });
  try {
    gpu().embedding(y.t(true), table.t(false), ids_ok);
    ADD_FAILURE() << "embedding took a host table";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("embedding: table is not a cuda tensor"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ninfer::testing
