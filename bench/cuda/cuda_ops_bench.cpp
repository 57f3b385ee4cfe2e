// ninfer-bench-cuda: the CUDA backend's ops at the seed model's shapes (Qwen3.5-27B: hidden 5120, MLP 17408, 24 query
// heads / 4 KV heads of 256 in attention, 16 key / 48 value heads of 128 in Gated DeltaNet), timed through the
// Backend interface, in GB/s and % of the device-to-device copy bandwidth measured in the same run (bytes read +
// written), and TFLOP/s for prefill GEMMs; the W4A4 decode linear with both sets of decode kernels side by side
// (kern::W4a4Gemv). Correctness is the op suite's (tests/cuda); this only times.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/cuda/e2e_bench.h"
#include "engine/backend/backend.h"
#include "engine/backend/cuda_backend.h"
#include "engine/core/error.h"
#include "engine/quant/nvfp4.h"

#if defined(NINFER_WITH_CUDA)
#include "engine/backend/cuda/nvfp4_quantize.h"
#endif

using namespace ninfer;
using Clock = std::chrono::steady_clock;

namespace {

Tensor contiguous(void* data, DType dtype, Device device, const std::vector<int64_t>& shape) {
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  t.device = device;
  t.ndim = static_cast<int>(shape.size());
  int64_t s = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    t.shape[static_cast<size_t>(i)] = shape[static_cast<size_t>(i)];
    t.stride[static_cast<size_t>(i)] = s;
    s *= shape[static_cast<size_t>(i)];
  }
  return t;
}

// Device tensors the bench owns.
struct Pool {
  explicit Pool(Backend& backend) : be(backend) {}
  Backend& be;
  std::mt19937 rng{1};
  std::vector<Buffer> keep;

  // Raw bytes uploaded, viewed as `dtype` with `shape` (nvfp4: the packed entry).
  Tensor upload(const void* host, size_t bytes, DType dtype, const std::vector<int64_t>& shape) {
    keep.push_back(be.alloc(bytes));
    be.copy(Tensor::make(keep.back().data(), DType::kI8, {static_cast<int64_t>(bytes)}, be.device()),
            Tensor::make(const_cast<void*>(host), DType::kI8, {static_cast<int64_t>(bytes)}));
    return contiguous(keep.back().data(), dtype, be.device(), shape);
  }
  std::vector<float> random(int64_t n, float scale) {
    std::vector<float> h(static_cast<size_t>(n));
    std::uniform_real_distribution<float> u(-scale, scale);
    for (auto& v : h) v = u(rng);
    return h;
  }
  Tensor f32(const std::vector<int64_t>& shape, float scale = 1.0f) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const auto h = random(n, scale);
    return upload(h.data(), h.size() * 4, DType::kF32, shape);
  }
  Tensor bf16(int64_t N, int64_t K) {
    const auto h = random(N * K, 0.05f);
    std::vector<uint16_t> b(h.size());
    for (size_t i = 0; i < h.size(); ++i) {
      uint32_t u;
      std::memcpy(&u, &h[i], 4);
      b[i] = static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
    }
    return upload(b.data(), b.size() * 2, DType::kBF16, {N, K});
  }
  // A packed NVFP4 entry of random codes and block scales (E4M3 0.25…1.875), weight_scale_2 1e-3, dynamic input
  // scales: what a kernel reads, without quantizing N·K floats on the host (the lm_head shard is 636 M elements).
  Tensor nvfp4_random(int64_t N, int64_t K) {
    const int64_t shape[2] = {N, K};
    const auto layout = nvfp4_layout(shape);
    std::vector<uint8_t> packed(layout->total_bytes, 0);
    uint64_t state = 0x9E3779B97F4A7C15ull;
    auto next = [&] {  // xorshift64*
      state ^= state >> 12;
      state ^= state << 25;
      state ^= state >> 27;
      return state * 0x2545F4914F6CDD1Dull;
    };
    for (size_t i = 0; i + 8 <= static_cast<size_t>(N * K / 2); i += 8) {
      const uint64_t v = next();
      std::memcpy(packed.data() + i, &v, 8);
    }
    for (uint64_t i = 0; i < static_cast<uint64_t>(N * K / 16); ++i)
      packed[layout->scales_offset + i] = static_cast<uint8_t>(0x28 + next() % 24);
    const float trailer[2] = {1e-3f, 0.0f};
    std::memcpy(packed.data() + layout->tensor_scale_offset, trailer, sizeof(trailer));
    return upload(packed.data(), packed.size(), DType::kNVFP4, {N, K});
  }
  Tensor nvfp4(int64_t N, int64_t K) {
    const auto h = random(N * K, 0.05f);
    const int64_t shape[2] = {N, K};
    const auto layout = nvfp4_layout(shape);
    std::vector<std::byte> packed(layout->total_bytes);
    quantize_nvfp4(h.data(), static_cast<uint64_t>(N), static_cast<uint64_t>(K), packed);
    return upload(packed.data(), packed.size(), DType::kNVFP4, {N, K});
  }
};

// Mean seconds per call over `reps` calls after two warm-ups, the stream synchronized around the timed loop (launch
// overheads included, as a decode step sees them without CUDA graphs).
double time_op(Backend& be, int reps, const std::function<void()>& fn) {
  fn();
  fn();
  be.synchronize();
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) fn();
  be.synchronize();
  return std::chrono::duration<double>(Clock::now() - t0).count() / reps;
}

struct Report {
  double copy_bw = 0;  // bytes read + written per second
  void row(const std::string& op, const std::string& shape, double s, double bytes, double flops = 0) {
    const double bw = bytes / s;
    fmt::print("{:<28} {:<34} {:>10.1f} {:>9.1f} {:>7.1f}% {:>9}\n", op, shape, s * 1e6, bw / 1e9, 100.0 * bw / copy_bw,
               flops > 0 ? fmt::format("{:.1f}", flops / s / 1e12) : std::string("-"));
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CUDA backend op bench: GB/s and % of the device copy bandwidth at the seed model's shapes"};
  int device = 0, reps = 20;
  int64_t context = 32768;
  std::string only = "all";
  app.add_option("--device", device, "CUDA device");
  app.add_option("--reps", reps, "timed calls per op (mean reported)");
  app.add_option("--context", context, "attention decode context (tokens in the cache)");
  app.add_option("--only", only, "all | linear | w4a4 | attention | gdn | norm | argmax");
  bench::E2eOptions e2e;
  bool run_e2e = false;
  app.add_flag("--e2e", run_e2e,
               "instead of the ops: the whole forward of a model of --config's shape, weights made on the device, "
               "prefill and batch-1 decode with step graphs off and on (bench/cuda/e2e_bench.h)");
  app.add_option("--config", e2e.config, "--e2e: the model's Hugging Face config.json")->capture_default_str();
  app.add_option("--tp", e2e.tp, "--e2e: time one GPU's shard of a TP group of this size")->capture_default_str();
  app.add_option("--contexts", e2e.contexts, "--e2e: contexts decode is measured at")->delimiter(',');
  app.add_option("--decode-steps", e2e.decode_steps, "--e2e: timed decode steps per context")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::unique_ptr<Backend> be;
  try {
    be = make_cuda_backend({.device = device});
  } catch (const Error& e) {
    fmt::print(stderr, "ninfer-bench-cuda: no CUDA backend to time: {}\n", e.what());
    return 2;
  }
  Pool pool(*be);
  Report rep;
  {  // the roofline of this run: a 1 GiB device-to-device copy
    const int64_t n = int64_t{1} << 28;
    Buffer a = be->alloc(static_cast<size_t>(n) * 4), b = be->alloc(static_cast<size_t>(n) * 4);
    Tensor ta = contiguous(a.data(), DType::kF32, be->device(), {n}), tb = contiguous(b.data(), DType::kF32, be->device(), {n});
    const double s = time_op(*be, 10, [&] { be->copy(tb, ta); });
    rep.copy_bw = 2.0 * double(n) * 4 / s;
  }
  e2e.device = device;
  if (run_e2e) return bench::run_e2e_bench(e2e, *be, rep.copy_bw);
  fmt::print("backend {}\ndevice-to-device copy: {:.1f} GB/s (bytes read + written)\n\n", be->name(), rep.copy_bw / 1e9);
  fmt::print("{:<28} {:<34} {:>10} {:>9} {:>8} {:>9}\n", "op", "shape", "us", "GB/s", "of copy", "TFLOP/s");
  const bool all = only == "all";

  if (all || only == "linear") {
    const int64_t H = 5120, I = 17408;
    for (auto [name, w] : {std::pair{"bf16", pool.bf16(I, H)}, std::pair{"nvfp4", pool.nvfp4(I, H)}}) {
      const double wbytes = name == std::string("bf16") ? double(I) * H * 2 : double(I) * H * 0.5625;
      for (int64_t M : {1, 4, 8}) {
        Tensor x = pool.f32({M, H}), y = pool.f32({M, I});
        rep.row(fmt::format("linear {} M={}", name, M), fmt::format("[{}x{}]·[{}x{}]T", M, H, I, H),
                time_op(*be, reps, [&] { be->linear(y, x, w); }), wbytes + double(M) * (H + I) * 4,
                2.0 * M * H * I);
      }
      const int64_t M = 2048;
      Tensor x = pool.f32({M, H}), y = pool.f32({M, I});
      rep.row(fmt::format("linear {} M={}", name, M), fmt::format("[{}x{}]·[{}x{}]T", M, H, I, H),
              time_op(*be, std::max(2, reps / 10), [&] { be->linear(y, x, w); }), wbytes + double(M) * (H + I) * 4,
              2.0 * M * H * I);
    }
    // The same NVFP4 weights in W4A16 mode (a second backend on the device, f32 activations: no quantizer launch),
    // which also tells the W4A4 rows' quantizer share.
    const Tensor w = pool.nvfp4(I, H);
    std::unique_ptr<Backend> a16 = make_cuda_backend({.device = device, .nvfp4_activations = Nvfp4Activations::kFloat});
    for (int64_t M : {1, 8}) {
      Tensor x = pool.f32({M, H}), y = pool.f32({M, I});
      rep.row(fmt::format("linear nvfp4 w4a16 M={}", M), fmt::format("[{}x{}]·[{}x{}]T", M, H, I, H),
              time_op(*a16, reps, [&] { a16->linear(y, x, w); }), double(I) * H * 0.5625 + double(M) * (H + I) * 4,
              2.0 * M * H * I);
    }
  }
#if defined(NINFER_WITH_CUDA)
  if (all || only == "w4a4") {
    // The W4A4 decode linear (quantizer + GEMV, as a decode step runs it) with both sets of kernels side by side
    // (kern::W4a4Gemv: tiled = the default, stream = nvfp4_gemv.cu), at the 27B model's shapes: q/o-like 5120×5120,
    // gate/up 17408×5120, down 5120×17408, and half of the 248320-row lm_head (a TP2 shard).
    const std::pair<int64_t, int64_t> shapes[] = {{5120, 5120}, {17408, 5120}, {5120, 17408}, {124160, 5120}};
    for (auto [N, K] : shapes) {
      const Tensor w = pool.nvfp4_random(N, K);
      for (int64_t M : {1, 2, 4, 8}) {
        Tensor x = pool.f32({M, K}), y = pool.f32({M, N});
        for (auto [name, gemv] :
             {std::pair{"tiled", kern::W4a4Gemv::kTiled}, std::pair{"stream", kern::W4a4Gemv::kStream}})
          rep.row(fmt::format("w4a4 {} M={}", name, M), fmt::format("[{}x{}]·[{}x{}]T", M, K, N, K),
                  time_op(*be, reps, [&] { cuda::linear_w4a4(*be, y, x, w, false, gemv); }),
                  double(N) * K * 0.5625 + double(M) * (K + N) * 4, 2.0 * M * N * K);
      }
    }
  }
#endif
  if (all || only == "norm") {
    for (int64_t T : {1, 2048}) {
      Tensor x = pool.f32({T, 5120}), w = pool.f32({5120}), y = pool.f32({T, 5120});
      rep.row(fmt::format("rms_norm T={}", T), "[T, 5120]", time_op(*be, reps, [&] { be->rms_norm(y, x, w, 1e-6f, 1.0f); }),
              2.0 * T * 5120 * 4);
      // The residual add and the norm after it, as two ops and fused; both counted with the fused op's traffic
      // (read x and delta, write x and y), so the GB/s columns compare the same work.
      Tensor d = pool.f32({T, 5120});
      rep.row(fmt::format("add + rms_norm T={}", T), "[T, 5120]", time_op(*be, reps, [&] {
                be->add(x, x, d);
                be->rms_norm(y, x, w, 1e-6f, 1.0f);
              }),
              4.0 * T * 5120 * 4);
      rep.row(fmt::format("add_rms_norm T={}", T), "[T, 5120]",
              time_op(*be, reps, [&] { be->add_rms_norm(x, y, d, w, 1e-6f, 1.0f); }), 4.0 * T * 5120 * 4);
    }
  }
  if (all || only == "argmax") {
    // Greedy choices over the 27B's 248,320-token vocabulary, for a decode row and an MTP K=3 verify block: the ids
    // taken on the device (argmax_rows, which reads the R ids back and waits) against bringing the rows to the host
    // and taking them there (the path before argmax_rows). Both counted with the logits' bytes.
    const int64_t V = 248320;
    for (int64_t R : {1, 4}) {
      Tensor x = pool.f32({R, V});
      std::vector<int32_t> ids(static_cast<size_t>(R));
      std::vector<float> host(static_cast<size_t>(R * V));
      rep.row(fmt::format("argmax_rows R={}", R), "[R, 248320]",
              time_op(*be, reps, [&] { be->argmax_rows(ids, x); }), double(R) * V * 4);
      rep.row(fmt::format("rows to host + argmax R={}", R), "[R, 248320]", time_op(*be, reps, [&] {
                be->copy(Tensor::make(host.data(), DType::kF32, {R, V}, Device::kCpu), x);
                be->synchronize();
                for (int64_t r = 0; r < R; ++r)
                  ids[static_cast<size_t>(r)] = static_cast<int32_t>(
                      std::max_element(host.begin() + r * V, host.begin() + (r + 1) * V) - (host.begin() + r * V));
              }),
              double(R) * V * 4);
      // A sampled step with Qwen's default top_k 20: the first 20 pairs on the device (top_k_rows, read back) against
      // the rows to the host and the sampler's partial sort there.
      constexpr int64_t k = 20;
      Tensor best = pool.f32({R, k, 2});
      std::vector<float> pairs(static_cast<size_t>(R * k * 2));
      std::vector<int32_t> order(static_cast<size_t>(V));
      rep.row(fmt::format("top_k_rows k=20 R={}", R), "[R, 248320]", time_op(*be, reps, [&] {
                be->top_k_rows(best, x);
                be->copy(Tensor::make(pairs.data(), DType::kF32, {R, k, 2}, Device::kCpu), best);
                be->synchronize();
              }),
              double(R) * V * 4);
      // The same step for requests with a repetition penalty over 4,096 distinct ids (a long prompt's) and a presence
      // penalty: the edits uploaded and applied (edit_logits), then the pairs; the host path is the row below plus
      // the same edits on the host.
      std::vector<LogitEdit> edits;
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < 4096; ++c)
          edits.push_back({.row = static_cast<int32_t>(r), .col = static_cast<int32_t>(c * (V / 4096)), .scale = 1.1f,
                           .sub = 0.5f});
      rep.row(fmt::format("edit_logits 4096/row + top_k_rows k=20 R={}", R), "[R, 248320]", time_op(*be, reps, [&] {
                be->edit_logits(x, edits);
                be->top_k_rows(best, x);
                be->copy(Tensor::make(pairs.data(), DType::kF32, {R, k, 2}, Device::kCpu), best);
                be->synchronize();
              }),
              double(R) * V * 4);
      rep.row(fmt::format("rows to host + top 20 R={}", R), "[R, 248320]", time_op(*be, reps, [&] {
                be->copy(Tensor::make(host.data(), DType::kF32, {R, V}, Device::kCpu), x);
                be->synchronize();
                for (int64_t r = 0; r < R; ++r) {
                  const float* l = host.data() + r * V;
                  std::iota(order.begin(), order.end(), 0);
                  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
                    return l[a] > l[b] || (l[a] == l[b] && a < b);
                  });
                }
              }),
              double(R) * V * 4);
    }
  }
  if (all || only == "attention") {
    const int64_t nh = 24, nkv = 4, hd = 256, bs = 16;
    const int64_t blocks = (context + bs - 1) / bs;
    for (DType kv : {DType::kBF16, DType::kI8}) {
      const size_t eb = dtype_element_bytes(kv);
      KvLayer layer;
      const size_t bytes = static_cast<size_t>(blocks * bs * nkv * hd) * eb;
      Buffer kb = be->alloc(bytes), vb = be->alloc(bytes);
      layer.k = contiguous(kb.data(), kv, be->device(), {blocks, bs, nkv, hd});
      layer.v = contiguous(vb.data(), kv, be->device(), {blocks, bs, nkv, hd});
      Buffer ks, vs;
      if (kv == DType::kI8) {
        ks = be->alloc(static_cast<size_t>(blocks * bs * nkv) * 4);
        vs = be->alloc(static_cast<size_t>(blocks * bs * nkv) * 4);
        layer.k_scale = contiguous(ks.data(), DType::kF32, be->device(), {blocks, bs, nkv});
        layer.v_scale = contiguous(vs.data(), DType::kF32, be->device(), {blocks, bs, nkv});
      }
      std::vector<int32_t> table(static_cast<size_t>(blocks));
      for (int64_t b = 0; b < blocks; ++b) table[static_cast<size_t>(b)] = static_cast<int32_t>((b * 7919) % blocks);
      std::vector<int32_t> q_start = {0, 1}, seq_len = {static_cast<int32_t>(context)};
      Tensor q = pool.f32({1, nh, hd}), out = pool.f32({1, nh, hd});
      PagedKv paged{q_start, seq_len, table, static_cast<int32_t>(blocks)};
      const double kv_bytes = 2.0 * double(context) * nkv * (hd * eb + (kv == DType::kI8 ? 4 : 0));
      rep.row(fmt::format("attention decode {}", dtype_name(kv)), fmt::format("ctx {} 24/4 heads hd 256", context),
              time_op(*be, reps, [&] { be->attention(out, q, layer, paged, 0.0625f); }), kv_bytes);
    }
  }
  if (all || only == "gdn") {
    const int64_t nk = 16, nv = 48, dk = 128, dv = 128;
    Tensor state = pool.f32({1, nv, dk, dv}, 0.01f);
    std::vector<int32_t> slot = {0};
    for (int64_t T : {1, 2048}) {
      std::vector<int32_t> q_start = {0, static_cast<int32_t>(T)};
      SeqBatch batch{q_start, slot};
      Tensor q = pool.f32({T, nk, dk}, 0.08f), k = pool.f32({T, nk, dk}, 0.08f), v = pool.f32({T, nv, dv});
      Tensor g = pool.f32({T, nv}, 0.1f), beta = pool.f32({T, nv}, 0.5f), out = pool.f32({T, nv, dv});
      const double bytes = 2.0 * nv * dk * dv * 4 + double(T) * (2 * nk * dk + 2 * nv * dv + 2 * nv) * 4;
      rep.row(fmt::format("gated_delta_rule T={}", T), "16/48 heads 128x128 state",
              time_op(*be, T == 1 ? reps : std::max(2, reps / 10),
                      [&] { be->gated_delta_rule(out, q, k, v, g, beta, state, batch); }),
              bytes);
    }
  }
  return 0;
}
