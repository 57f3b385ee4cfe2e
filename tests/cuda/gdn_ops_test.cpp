// The CUDA Gated-DeltaNet ops (conv1d, gdn_gating, gated_delta_rule) against the CPU oracle: every weight dtype,
// varlen batches with empty / 1 / 17 / 300-row sequences on scattered state slots, checkpoints, strided views as the
// forward passes them, recurrent vs chunked; checkpoint copies bit-identical to token-by-token decoding on the GPU.
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/cuda/cuda_test_support.h"

namespace ninfer::testing {
namespace {

// A batch whose host spans outlive the op calls.
struct Batch {
  std::vector<int32_t> q_start, state_slot, checkpoint_slot;
  SeqBatch view() const { return SeqBatch{q_start, state_slot, checkpoint_slot}; }
  int32_t rows() const { return q_start.back(); }
};
Batch make_batch(const std::vector<int32_t>& lens, const std::vector<int32_t>& slots) {
  Batch b;
  b.q_start.push_back(0);
  for (int32_t n : lens) b.q_start.push_back(b.q_start.back() + n);
  b.state_slot = slots;
  return b;
}

// max |got − want| / max |want| (0 when both are zero).
double max_rel(const std::vector<float>& got, const std::vector<float>& want) { return rel_err(got, want); }

// Expects fn to throw Error of `kind` whose message names `op`.
template <typename Fn>
void expect_error(Fn&& fn, ErrorKind kind, const std::string& op, const std::string& what) {
  try {
    fn();
    ADD_FAILURE() << what << ": no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << what << ": " << e.what();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// gdn_gating: expf/log1pf within 2 ulp of glibc → 2e-6 relative (+1e-7 absolute near 0).

TEST(CudaGdnGating, SmallMatchesCpuEveryDtype) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(11);
  const int64_t T = 37, nv = 48;
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    HostTensor a = random_tensor({T, nv}, rng, -8.0f, 8.0f), b = random_tensor({T, nv}, rng, -10.0f, 10.0f);
    for (int64_t h = 0; h < nv; h += 5) a.values[static_cast<size_t>(h)] = 19.0f + 0.25f * static_cast<float>(h % 9);  // threshold
    HostTensor A_log = random_tensor({nv}, rng, -2.0f, 1.5f, dt), dt_bias = random_tensor({nv}, rng, -1.0f, 1.0f, dt);
    HostTensor g({T, nv}), beta({T, nv});
    cpu_oracle().gdn_gating(g.view(), beta.view(), a.view(), b.view(), A_log.view(), dt_bias.view());
    // device: a and b as strided halves of one [T, 2nv] buffer (row stride 2nv), as views of a wider projection
    DeviceTensor ab = device_alloc(DType::kF32, {T, 2 * nv});
    Tensor da = Tensor::strided(ab.t.data, DType::kF32, {T, nv}, {2 * nv, 1}, Device::kCuda);
    Tensor db = Tensor::strided(static_cast<float*>(ab.t.data) + nv, DType::kF32, {T, nv}, {2 * nv, 1}, Device::kCuda);
    gpu().copy(da, a.view());
    gpu().copy(db, b.view());
    DeviceTensor dAl = to_device(A_log), ddt = to_device(dt_bias);
    DeviceTensor dg = device_alloc(DType::kF32, {T, nv}), dbeta = device_alloc(DType::kF32, {T, nv});
    gpu().gdn_gating(dg.t, dbeta.t, da, db, dAl.t, ddt.t);
    EXPECT_TRUE(all_close(to_host_f32(dg.t), g.values, 1e-7, 2e-6)) << dtype_name(dt);
    EXPECT_TRUE(all_close(to_host_f32(dbeta.t), beta.values, 1e-7, 2e-6)) << dtype_name(dt);
  }
}

TEST(CudaGdnGating, SmallRejectsBadArguments) {
  NINFER_REQUIRE_CUDA();
  DeviceTensor a = device_alloc(DType::kF32, {4, 6}), g = device_alloc(DType::kF32, {4, 6});
  DeviceTensor beta = device_alloc(DType::kF32, {4, 6}), w = device_alloc(DType::kF32, {6}), w5 = device_alloc(DType::kF32, {5});
  DeviceTensor wi8 = device_alloc(DType::kI8, {6});
  expect_error([&] { gpu().gdn_gating(g.t, beta.t, a.t, a.t, w5.t, w.t); }, ErrorKind::kInvalidArgument, "gdn_gating", "A_log [5]");
  expect_error([&] { gpu().gdn_gating(g.t, beta.t, a.t, a.t, w.t, wi8.t); }, ErrorKind::kUnsupported, "gdn_gating", "dt_bias i8");
  DeviceTensor g3 = device_alloc(DType::kF32, {4, 5});
  expect_error([&] { gpu().gdn_gating(g3.t, beta.t, a.t, a.t, w.t, w.t); }, ErrorKind::kInvalidArgument, "gdn_gating", "g shape");
}

// ---------------------------------------------------------------------------------------------------------------
// conv1d: the sum is formed as the CPU forms it (mul, then add, per tap) → bit-exact without SiLU; SiLU's expf
// within 2 ulp → 1e-6 relative (+1e-7 absolute). State and checkpoints are copies: bit-exact.

struct ConvCase {
  int64_t C, K;
  DType wdt;
  bool w3;  // [C, 1, K]
};

void run_conv_case(const ConvCase& cc, bool silu, bool checkpoints, std::mt19937& rng) {
  const int64_t C = cc.C, K = cc.K, slots = 12;
  Batch batch = make_batch({0, 1, 17, 300, 3}, {5, 1, 7, 3, 10});
  const int64_t T = batch.rows();
  if (checkpoints) {
    batch.checkpoint_slot.assign(static_cast<size_t>(T), -1);
    batch.checkpoint_slot[0] = 0;                       // the 1-row sequence
    batch.checkpoint_slot[1] = 2;                       // rows 0..2 of the 17-row sequence
    batch.checkpoint_slot[2] = 4;
    batch.checkpoint_slot[3] = 6;
    batch.checkpoint_slot[static_cast<size_t>(T - 2)] = 8;  // the 3-row sequence, rows 1 and 2
    batch.checkpoint_slot[static_cast<size_t>(T - 1)] = 9;
  }
  HostTensor xw = random_tensor({T, C + 7}, rng, -2.0f, 2.0f);  // x: [T, C] view with row stride C + 7
  HostTensor w = cc.w3 ? random_tensor({C, 1, K}, rng, -1.0f, 1.0f, cc.wdt) : random_tensor({C, K}, rng, -1.0f, 1.0f, cc.wdt);
  HostTensor state = random_tensor({slots, K - 1, C}, rng, -2.0f, 2.0f);
  HostTensor out({T, C});
  Tensor hx = Tensor::strided(xw.values.data(), DType::kF32, {T, C}, {C + 7, 1});

  DeviceTensor dxw = to_device(xw), dw = to_device(w), dstate = to_device(state);
  Tensor dx = Tensor::strided(dxw.t.data, DType::kF32, {T, C}, {C + 7, 1}, Device::kCuda);
  DeviceTensor dout = device_alloc(DType::kF32, {T, C}, {C + 3, 1});  // strided out as well

  cpu_oracle().conv1d(out.view(), hx, w.view(), state.view(), batch.view(), silu);
  gpu().conv1d(dout.t, dx, dw.t, dstate.t, batch.view(), silu);
  HostTensor got({T, C});
  gpu().copy(got.view(), dout.t);
  gpu().synchronize();
  const std::string what = "C " + std::to_string(C) + " K " + std::to_string(K) + " w " + std::string(dtype_name(cc.wdt)) +
                           (cc.w3 ? " [C,1,K]" : "") + (silu ? " silu" : "") + (checkpoints ? " checkpoints" : "");
  if (silu) EXPECT_TRUE(all_close(got.values, out.values, 1e-7, 1e-6)) << what;
  else EXPECT_EQ(got.values, out.values) << what;
  EXPECT_EQ(to_host_f32(dstate.t), state.values) << what << ": state (every slot, checkpoints included)";
}

TEST(CudaGdnConv1d, SmallMatchesCpu) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(21);
  for (bool ck : {false, true})
    for (bool silu : {false, true}) run_conv_case({37, 4, DType::kF32, false}, silu, ck, rng);
}

TEST(CudaGdnConv1d, MatchesCpuEveryDtypeAndKernelSize) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(22);
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16})
    for (int64_t K : {2, 3, 4})
      for (int64_t C : {1, 37, 300})
        for (bool ck : {false, true}) run_conv_case({C, K, dt, C == 37}, true, ck, rng);
}

TEST(CudaGdnConv1d, PiecesEqualWholeAndEmptyBatchKeepsState) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(23);
  const int64_t C = 70, K = 4, T = 41;
  HostTensor x = random_tensor({T, C}, rng), w = random_tensor({C, K}, rng, -1, 1, DType::kBF16);
  HostTensor st0 = random_tensor({3, K - 1, C}, rng);
  DeviceTensor dx = to_device(x), dw = to_device(w);
  DeviceTensor whole = to_device(st0), pieces = to_device(st0);
  DeviceTensor ow = device_alloc(DType::kF32, {T, C}), op = device_alloc(DType::kF32, {T, C});
  Batch one = make_batch({static_cast<int32_t>(T)}, {2});
  gpu().conv1d(ow.t, dx.t, dw.t, whole.t, one.view(), true);
  for (int64_t r0 : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{20}}) {
    const int64_t r1 = r0 == 0 ? 1 : r0 == 1 ? 3 : r0 == 3 ? 20 : T;
    Batch b = make_batch({static_cast<int32_t>(r1 - r0)}, {2});
    gpu().conv1d(op.t.slice0(r0, r1), dx.t.slice0(r0, r1), dw.t, pieces.t, b.view(), true);
  }
  EXPECT_EQ(to_host_bytes(op.t), to_host_bytes(ow.t));
  EXPECT_EQ(to_host_bytes(pieces.t), to_host_bytes(whole.t));
  // a batch of empty sequences: nothing changes
  Batch empty = make_batch({0, 0}, {0, 2});
  gpu().conv1d(op.t.slice0(0, 0), dx.t.slice0(0, 0), dw.t, pieces.t, empty.view(), true);
  EXPECT_EQ(to_host_bytes(pieces.t), to_host_bytes(whole.t));
}

TEST(CudaGdnConv1d, SmallRejectsBadArguments) {
  NINFER_REQUIRE_CUDA();
  const int64_t C = 8, K = 4;
  DeviceTensor x = device_alloc(DType::kF32, {5, C}), out = device_alloc(DType::kF32, {5, C});
  DeviceTensor w = device_alloc(DType::kF32, {C, K}), st = device_alloc(DType::kF32, {4, K - 1, C});
  DeviceTensor st_bad = device_alloc(DType::kF32, {4, K, C});
  Batch b = make_batch({2, 3}, {0, 1});
  expect_error([&] { gpu().conv1d(x.t, x.t, w.t, st.t, b.view(), true); }, ErrorKind::kInvalidArgument, "conv1d", "alias");
  expect_error([&] { gpu().conv1d(out.t, x.t, w.t, st_bad.t, b.view(), true); }, ErrorKind::kInvalidArgument, "conv1d", "state K");
  Batch shared = make_batch({2, 3}, {1, 1});
  expect_error([&] { gpu().conv1d(out.t, x.t, w.t, st.t, shared.view(), true); }, ErrorKind::kInvalidArgument, "conv1d", "shared slot");
  Batch outside = make_batch({2, 3}, {0, 4});
  expect_error([&] { gpu().conv1d(out.t, x.t, w.t, st.t, outside.view(), true); }, ErrorKind::kInvalidArgument, "conv1d", "slot 4");
  Batch ck = make_batch({2, 3}, {0, 1});
  ck.checkpoint_slot = {-1, 1, -1, -1, -1};
  expect_error([&] { gpu().conv1d(out.t, x.t, w.t, st.t, ck.view(), true); }, ErrorKind::kInvalidArgument, "conv1d", "checkpoint = state slot");
  ck.checkpoint_slot = {2, 2, -1, -1, -1};
  expect_error([&] { gpu().conv1d(out.t, x.t, w.t, st.t, ck.view(), true); }, ErrorKind::kInvalidArgument, "conv1d", "checkpoint twice");
  std::vector<float> hx(5 * C);
  expect_error([&] { gpu().conv1d(out.t, Tensor::make(hx.data(), DType::kF32, {5, C}), w.t, st.t, b.view(), true); },
               ErrorKind::kInvalidArgument, "conv1d", "host x");
}

// ---------------------------------------------------------------------------------------------------------------
// gated_delta_rule. Tolerances (max |diff| / max |ref| over the tensor): GPU vs CPU in the same form 1e-5 for
// recurrent, 2e-5 for chunked (the chunk algebra adds rounding); GPU chunked vs CPU recurrent 5e-5.

struct DeltaShape {
  int64_t nk, ratio, dk, dv;
};
std::string shape_name(const DeltaShape& s) {
  return "nk " + std::to_string(s.nk) + " nv " + std::to_string(s.nk * s.ratio) + " dk " + std::to_string(s.dk) +
         " dv " + std::to_string(s.dv);
}

// Inputs as the forward makes them: q, k l2-normalised (q also × dk^-½) and contiguous; v a strided view of a conv
// output [T, 2·nk·dk + nv·dv] (row stride C); g = −softplus-like decays; beta in (0, 1).
struct DeltaInputs {
  DeltaShape s;
  int64_t T = 0, Cw = 0;
  HostTensor q, k, conv, g, beta;
  Tensor v_host() { return Tensor::strided(conv.values.data() + 2 * s.nk * s.dk, DType::kF32, {T, s.nk * s.ratio, s.dv}, {Cw, s.dv, 1}); }
};
DeltaInputs make_delta_inputs(const DeltaShape& s, int64_t T, std::mt19937& rng, float g_lo = -1.0f) {
  DeltaInputs in;
  in.s = s;
  in.T = T;
  const int64_t nv = s.nk * s.ratio;
  in.Cw = 2 * s.nk * s.dk + nv * s.dv;
  in.q = random_tensor({T, s.nk, s.dk}, rng);
  in.k = random_tensor({T, s.nk, s.dk}, rng);
  for (HostTensor* t : {&in.q, &in.k}) {
    const float scale = t == &in.q ? 1.0f / std::sqrt(static_cast<float>(s.dk)) : 1.0f;
    for (int64_t r = 0; r < T * s.nk; ++r) {
      float* row = t->values.data() + r * s.dk;
      double ss = 0.0;
      for (int64_t d = 0; d < s.dk; ++d) ss += double(row[d]) * row[d];
      const float inv = static_cast<float>(1.0 / std::sqrt(ss + 1e-6)) * scale;
      for (int64_t d = 0; d < s.dk; ++d) row[d] *= inv;
    }
  }
  in.conv = random_tensor({T, in.Cw}, rng);
  in.g = random_tensor({T, nv}, rng, g_lo, 0.0f);
  in.beta = random_tensor({T, nv}, rng, 0.05f, 0.95f);
  return in;
}

struct DeltaRun {
  std::vector<float> out, state;
};
// Runs the op on the CPU (host tensors) and on the GPU (device copies of the same inputs and initial state).
void run_delta(DeltaInputs& in, const Batch& batch, const HostTensor& state0, DeltaRuleAlgo cpu_algo,
               DeltaRuleAlgo gpu_algo, DeltaRun& cpu, DeltaRun& dev) {
  const int64_t nv = in.s.nk * in.s.ratio, T = in.T;
  HostTensor out({T, nv, in.s.dv}), st = state0;
  cpu_oracle().gated_delta_rule(out.view(), in.q.view(), in.k.view(), in.v_host(), in.g.view(), in.beta.view(), st.view(),
                                batch.view(), cpu_algo);
  cpu.out = out.values;
  cpu.state = st.values;
  HostTensor st0_copy = state0;
  DeviceTensor dq = to_device(in.q), dk = to_device(in.k), dconv = to_device(in.conv), dg = to_device(in.g);
  DeviceTensor dbeta = to_device(in.beta), dst = to_device(st0_copy);
  Tensor dv = Tensor::strided(static_cast<float*>(dconv.t.data) + 2 * in.s.nk * in.s.dk, DType::kF32,
                              {T, nv, in.s.dv}, {in.Cw, in.s.dv, 1}, Device::kCuda);
  DeviceTensor dout = device_alloc(DType::kF32, {T, nv, in.s.dv});
  gpu().gated_delta_rule(dout.t, dq.t, dk.t, dv, dg.t, dbeta.t, dst.t, batch.view(), gpu_algo);
  dev.out = to_host_f32(dout.t);
  dev.state = to_host_f32(dst.t);
}

// out and state within `tol` (max |diff| / max |ref|) of the reference run.
void expect_close(const DeltaRun& got, const DeltaRun& ref, double tol, const std::string& what) {
  EXPECT_LE(max_rel(got.out, ref.out), tol) << what << ": out";
  EXPECT_LE(max_rel(got.state, ref.state), tol) << what << ": state";
}

const char* algo_name(DeltaRuleAlgo a) {
  return a == DeltaRuleAlgo::kAuto ? "auto" : a == DeltaRuleAlgo::kRecurrent ? "recurrent" : "chunked";
}

void check_delta_shape(const DeltaShape& s, bool checkpoints, std::mt19937& rng) {
  const int64_t nv = s.nk * s.ratio, slots = 16;
  Batch batch = make_batch({0, 1, 17, 300, 5}, {9, 2, 14, 5, 6});  // 5 rows: kAuto's chunked form, one short chunk
  if (checkpoints) {
    batch.checkpoint_slot.assign(static_cast<size_t>(batch.rows()), -1);
    batch.checkpoint_slot[0] = 0;  // the 1-row sequence
    batch.checkpoint_slot[1] = 3;  // the 17-row sequence: rows 0, 1, 16
    batch.checkpoint_slot[2] = 11;
    batch.checkpoint_slot[17] = 7;
  }
  DeltaInputs in = make_delta_inputs(s, batch.rows(), rng);
  HostTensor state0 = random_tensor({slots, nv, s.dk, s.dv}, rng, -0.5f, 0.5f);
  for (DeltaRuleAlgo algo : {DeltaRuleAlgo::kRecurrent, DeltaRuleAlgo::kChunked, DeltaRuleAlgo::kAuto}) {
    DeltaRun cpu, dev;
    run_delta(in, batch, state0, algo, algo, cpu, dev);
    const double tol = algo == DeltaRuleAlgo::kRecurrent ? 1e-5 : 2e-5;
    const std::string what = shape_name(s) + " " + algo_name(algo) + (checkpoints ? " checkpoints" : "");
    expect_close(dev, cpu, tol, what);
    EXPECT_LE(nmse(dev.out, cpu.out), tol * tol) << what << ": out nmse";
    if (algo == DeltaRuleAlgo::kChunked) {  // the contract: chunked == recurrent up to rounding
      DeltaRun cpu_rec, unused;
      run_delta(in, batch, state0, DeltaRuleAlgo::kRecurrent, DeltaRuleAlgo::kChunked, cpu_rec, unused);
      expect_close(dev, cpu_rec, 5e-5, what + " vs cpu recurrent");
    }
  }
}

TEST(CudaGdnDeltaRule, SmallMatchesCpu) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(31);
  check_delta_shape({2, 2, 16, 32}, false, rng);
  check_delta_shape({2, 2, 16, 32}, true, rng);
}

TEST(CudaGdnDeltaRule, MatchesCpuHeadDimsAndGroupings) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(32);
  for (DeltaShape s : {DeltaShape{2, 1, 16, 16}, DeltaShape{1, 3, 32, 32}, DeltaShape{2, 2, 64, 64},
                       DeltaShape{2, 3, 48, 48}, DeltaShape{1, 2, 128, 128}, DeltaShape{2, 1, 128, 64},
                       DeltaShape{1, 3, 64, 100}, DeltaShape{1, 1, 30, 18}})
    for (bool ck : {false, true}) check_delta_shape(s, ck, rng);
}

// Production shape (Qwen3.5-27B: nk 16, nv 48, dk = dv = 128), one sequence long enough for several chunk windows
// of the chunked form (64 MiB of scratch ≈ 21 chunks here), next to a short one.
TEST(CudaGdnDeltaRule, ChunkedAcrossWindowsMatchesCpu) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(33);
  const DeltaShape s{16, 3, 128, 128};
  Batch batch = make_batch({1500, 70}, {1, 0});
  DeltaInputs in = make_delta_inputs(s, batch.rows(), rng, -0.3f);
  HostTensor state0 = random_tensor({2, 48, 128, 128}, rng, -0.5f, 0.5f);
  DeltaRun cpu, dev;
  run_delta(in, batch, state0, DeltaRuleAlgo::kChunked, DeltaRuleAlgo::kAuto, cpu, dev);
  expect_close(dev, cpu, 5e-5, "nk 16 nv 48 dk 128 dv 128 chunked");
  EXPECT_LE(nmse(dev.out, cpu.out), 1e-10) << "out nmse";
}

// Fast decays (exp underflow to 0) and a zero state stay finite and agree in both forms.
TEST(CudaGdnDeltaRule, SmallFastDecaysAndZeroState) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(34);
  const DeltaShape s{1, 2, 32, 32};
  Batch batch = make_batch({70, 5}, {0, 1});
  DeltaInputs in = make_delta_inputs(s, batch.rows(), rng, -120.0f);
  in.g.values[3] = -INFINITY;
  HostTensor state0({2, 2, 32, 32});
  for (DeltaRuleAlgo algo : {DeltaRuleAlgo::kRecurrent, DeltaRuleAlgo::kChunked}) {
    DeltaRun cpu, dev;
    run_delta(in, batch, state0, algo, algo, cpu, dev);
    for (float v : dev.out) ASSERT_TRUE(std::isfinite(v)) << algo_name(algo);
    expect_close(dev, cpu, 2e-5, algo_name(algo));
  }
}

// The speculative-decoding contract on the GPU: K rows with checkpoints in one call (under any algo) leave in each
// checkpoint slot exactly the bytes that K calls of one row reach; outputs and the final state are identical too.
// conv1d the same.
TEST(CudaGdnDeltaRule, SmallCheckpointsEqualTokenByTokenBits) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(35);
  const DeltaShape s{2, 3, 128, 128};
  const int32_t Kr = 5;
  const int64_t nv = 6, C = 2 * 2 * 128 + nv * 128, Kc = 4, slots = 2 + 2 * Kr;
  // two sequences of Kr rows, state slots 1 and 0; checkpoints for rows 0..Kr-2 of each (row Kr-1 needs none)
  Batch block = make_batch({Kr, Kr}, {1, 0});
  block.checkpoint_slot.assign(2 * Kr, -1);
  for (int32_t j = 0; j + 1 < Kr; ++j) {
    block.checkpoint_slot[static_cast<size_t>(j)] = 2 + j;
    block.checkpoint_slot[static_cast<size_t>(Kr + j)] = 2 + Kr + j;
  }
  DeltaInputs in = make_delta_inputs(s, 2 * Kr, rng);
  HostTensor st0 = random_tensor({slots, nv, 128, 128}, rng, -0.5f, 0.5f);
  HostTensor cst0 = random_tensor({slots, Kc - 1, C}, rng);
  HostTensor w = random_tensor({C, Kc}, rng, -1, 1, DType::kBF16);
  DeviceTensor dq = to_device(in.q), dk = to_device(in.k), dconv = to_device(in.conv), dg = to_device(in.g);
  DeviceTensor dbeta = to_device(in.beta), dw = to_device(w);
  auto v_of = [&](const DeviceTensor& conv) {
    return Tensor::strided(static_cast<float*>(conv.t.data) + 2 * 2 * 128, DType::kF32, {2 * Kr, nv, 128}, {in.Cw, 128, 1}, Device::kCuda);
  };
  for (DeltaRuleAlgo algo : {DeltaRuleAlgo::kAuto, DeltaRuleAlgo::kChunked, DeltaRuleAlgo::kRecurrent}) {
    // one call with checkpoints
    DeviceTensor st = to_device(st0), cst = to_device(cst0);
    DeviceTensor out = device_alloc(DType::kF32, {2 * Kr, nv, 128}), cout = device_alloc(DType::kF32, {2 * Kr, C});
    gpu().conv1d(cout.t, dconv.t, dw.t, cst.t, block.view(), true);
    gpu().gated_delta_rule(out.t, dq.t, dk.t, v_of(dconv), dg.t, dbeta.t, st.t, block.view(), algo);
    // token by token: row j of both sequences per call, the state read after each call
    DeviceTensor st1 = to_device(st0), cst1 = to_device(cst0);
    DeviceTensor out1 = device_alloc(DType::kF32, {2 * Kr, nv, 128}), cout1 = device_alloc(DType::kF32, {2 * Kr, C});
    const std::vector<uint8_t> all = to_host_bytes(st.t), call = to_host_bytes(cst.t);
    const size_t srow = all.size() / slots, crow = call.size() / slots;
    for (int32_t j = 0; j < Kr; ++j) {
      for (int32_t sq = 0; sq < 2; ++sq) {
        const int64_t r = sq * Kr + j;
        Batch one = make_batch({1}, {sq == 0 ? 1 : 0});
        gpu().conv1d(cout1.t.slice0(r, r + 1), dconv.t.slice0(r, r + 1), dw.t, cst1.t, one.view(), true);
        gpu().gated_delta_rule(out1.t.slice0(r, r + 1), dq.t.slice0(r, r + 1), dk.t.slice0(r, r + 1),
                               v_of(dconv).slice0(r, r + 1), dg.t.slice0(r, r + 1), dbeta.t.slice0(r, r + 1), st1.t,
                               one.view(), DeltaRuleAlgo::kAuto);
        if (j + 1 == Kr) continue;
        const size_t ck = static_cast<size_t>(block.checkpoint_slot[static_cast<size_t>(r)]);
        const size_t own = static_cast<size_t>(sq == 0 ? 1 : 0);
        const std::vector<uint8_t> now = to_host_bytes(st1.t), cnow = to_host_bytes(cst1.t);
        EXPECT_EQ(0, std::memcmp(all.data() + ck * srow, now.data() + own * srow, srow))
            << algo_name(algo) << ": delta-rule checkpoint of row " << r;
        EXPECT_EQ(0, std::memcmp(call.data() + ck * crow, cnow.data() + own * crow, crow))
            << algo_name(algo) << ": conv checkpoint of row " << r;
      }
    }
    const std::vector<uint8_t> fin = to_host_bytes(st1.t), cfin = to_host_bytes(cst1.t);
    EXPECT_EQ(0, std::memcmp(all.data(), fin.data(), 2 * srow)) << algo_name(algo) << ": final states";
    EXPECT_EQ(0, std::memcmp(call.data(), cfin.data(), 2 * crow)) << algo_name(algo) << ": final conv states";
    EXPECT_EQ(to_host_bytes(out.t), to_host_bytes(out1.t)) << algo_name(algo) << ": outputs";
    EXPECT_EQ(to_host_bytes(cout.t), to_host_bytes(cout1.t)) << algo_name(algo) << ": conv outputs";
  }
}

TEST(CudaGdnDeltaRule, SmallRejectsBadArguments) {
  NINFER_REQUIRE_CUDA();
  const int64_t T = 3;
  DeviceTensor q = device_alloc(DType::kF32, {T, 2, 16}), k = device_alloc(DType::kF32, {T, 2, 16});
  DeviceTensor v = device_alloc(DType::kF32, {T, 4, 16}), out = device_alloc(DType::kF32, {T, 4, 16});
  DeviceTensor g = device_alloc(DType::kF32, {T, 4}), beta = device_alloc(DType::kF32, {T, 4});
  DeviceTensor st = device_alloc(DType::kF32, {3, 4, 16, 16}), v3 = device_alloc(DType::kF32, {T, 3, 16});
  DeviceTensor out3 = device_alloc(DType::kF32, {T, 3, 16}), g3 = device_alloc(DType::kF32, {T, 3});
  DeviceTensor st3 = device_alloc(DType::kF32, {3, 3, 16, 16});
  Batch b = make_batch({1, 2}, {0, 2});
  auto call = [&](const Tensor& o, const Tensor& vv, const Tensor& gg, const Tensor& bb, const Tensor& ss, const Batch& bt) {
    gpu().gated_delta_rule(o, q.t, k.t, vv, gg, bb, ss, bt.view(), DeltaRuleAlgo::kAuto);
  };
  expect_error([&] { gpu().gated_delta_rule(v.t, q.t, k.t, v.t, g.t, beta.t, st.t, b.view(), DeltaRuleAlgo::kAuto); },
               ErrorKind::kInvalidArgument, "gated_delta_rule", "out aliases v");
  expect_error([&] { call(out3.t, v3.t, g3.t, g3.t, st3.t, b); }, ErrorKind::kInvalidArgument, "gated_delta_rule", "nv 3 / nk 2");
  expect_error([&] { call(out.t, v.t, g.t, beta.t, st3.t, b); }, ErrorKind::kInvalidArgument, "gated_delta_rule", "state heads");
  Batch shared = make_batch({1, 2}, {2, 2});
  expect_error([&] { call(out.t, v.t, g.t, beta.t, st.t, shared); }, ErrorKind::kInvalidArgument, "gated_delta_rule", "shared slot");
  Batch ck = make_batch({1, 2}, {0, 2});
  ck.checkpoint_slot = {-1, 0, -1};
  expect_error([&] { call(out.t, v.t, g.t, beta.t, st.t, ck); }, ErrorKind::kInvalidArgument, "gated_delta_rule", "checkpoint = state slot");
  ck.checkpoint_slot = {-1, 3, -1};
  expect_error([&] { call(out.t, v.t, g.t, beta.t, st.t, ck); }, ErrorKind::kInvalidArgument, "gated_delta_rule", "checkpoint outside");
  // a key head dim above the kernels' limit is refused by name (the CPU takes it)
  DeviceTensor qb = device_alloc(DType::kF32, {1, 1, 160}), kb = device_alloc(DType::kF32, {1, 1, 160});
  DeviceTensor vb = device_alloc(DType::kF32, {1, 1, 8}), ob = device_alloc(DType::kF32, {1, 1, 8});
  DeviceTensor gb = device_alloc(DType::kF32, {1, 1}), bb = device_alloc(DType::kF32, {1, 1});
  DeviceTensor sb = device_alloc(DType::kF32, {1, 1, 160, 8});
  Batch b1 = make_batch({1}, {0});
  expect_error([&] { gpu().gated_delta_rule(ob.t, qb.t, kb.t, vb.t, gb.t, bb.t, sb.t, b1.view(), DeltaRuleAlgo::kAuto); },
               ErrorKind::kUnsupported, "gated_delta_rule", "dk 160");
}

}  // namespace
}  // namespace ninfer::testing
