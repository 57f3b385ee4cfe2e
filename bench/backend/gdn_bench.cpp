// ninfer-bench-gdn: the CPU backend's gated delta rule (Gated-DeltaNet's recurrence) over a prefill of T tokens, in
// the recurrent and the chunked form: ms, tokens/s and the chunked form's GFLOP/s (useful FLOPs, chunked_flops).
// Shapes default to the Qwen3.5 GDN head (dk = dv = 128) with 16 value heads, as a ~1B hybrid has. --decode-layers L
// adds the decode step: one token at a time through L layers' states (as a decode step meets them, so they stream
// from memory rather than sit in cache), timed per token and as GB/s of state read and written.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/backend/cpu_backend_flags.h"
#include "bench/common/timing.h"
#include "engine/backend/backend.h"

using namespace ninfer;

using bench::median_seconds;

namespace {

// Useful FLOPs of the chunked form's products over T tokens of one value head (chunks of 64, the last partial):
// the triangular ones (K Kᵀ, Q Kᵀ, the forward substitution of [βv | βe^γk], the masked (Q Kᵀ) V') counted over
// their L(L+1)/2 nonzero entries.
double chunked_flops(int64_t T, int64_t dk, int64_t dv) {
  double f = 0;
  for (int64_t c0 = 0; c0 < T; c0 += 64) {
    const double L = double(std::min<int64_t>(64, T - c0)), tri = L * (L + 1) / 2;
    f += 2 * (2 * tri * dk + tri * (dk + dv) + 2 * L * dk * dv + tri * dv + dk * L * dv);
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CPU gated delta rule bench: recurrent vs chunked prefill"};
  bench::CpuBackendFlags cpu;
  int reps = 5;
  int64_t nk = 16, nv = 16, dk = 128, dv = 128;
  std::vector<int64_t> lengths = {64, 512, 2048};
  cpu.add_to(app);
  app.add_option("--nk", nk, "key heads");
  app.add_option("--nv", nv, "value heads (a multiple of --nk)");
  app.add_option("--dk", dk, "key head dim");
  app.add_option("--dv", dv, "value head dim");
  app.add_option("--tokens", lengths, "prefill lengths");
  app.add_option("--reps", reps, "timed repetitions (median reported)");
  bool chunked_only = false;
  int64_t decode_layers = 0, decode_tokens = 32;
  app.add_option("--decode-layers", decode_layers, "also time decode: one token through this many layers' states");
  app.add_option("--decode-tokens", decode_tokens, "tokens of each decode repetition");
  app.add_flag("--chunked-only", chunked_only, "time the chunked form only (for a profile)");
  CLI11_PARSE(app, argc, argv);

  const CpuBackendOptions opt = cpu.options();
  auto be = make_cpu_backend(opt);
  fmt::print("backend {}; heads {} key / {} value, dk {}, dv {}; median of {}\n", be->name(), nk, nv, dk, dv, reps);
  fmt::print("{:>6} {:>10} {:>12} {:>10} {:>12} {:>10} {:>9}\n", "tokens", "rec ms", "rec tok/s", "chunk ms",
             "chunk tok/s", "GFLOP/s", "speedup");
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> U(-1, 1);
  for (int64_t T : lengths) {
    std::vector<float> q(static_cast<size_t>(T * nk * dk)), k(q.size()), v(static_cast<size_t>(T * nv * dv)),
        g(static_cast<size_t>(T * nv)), beta(g.size()), out(v.size()), state(static_cast<size_t>(nv * dk * dv));
    for (float& x : v) x = U(rng);
    for (float& x : g) x = -0.05f * (1.0f + U(rng));
    for (float& x : beta) x = 0.5f + 0.5f * U(rng);
    for (std::vector<float>* t : {&q, &k})  // unit rows, as after the model's l2 norm
      for (int64_t r = 0; r < T * nk; ++r) {
        float* p = t->data() + r * dk;
        double s = 0;
        for (int64_t i = 0; i < dk; ++i) {
          p[i] = U(rng);
          s += double(p[i]) * p[i];
        }
        for (int64_t i = 0; i < dk; ++i) p[i] = static_cast<float>(p[i] / std::sqrt(s));
      }
    const std::vector<int32_t> q_start{0, static_cast<int32_t>(T)}, slots{0};
    auto tensor = [](std::vector<float>& x, std::initializer_list<int64_t> shape) {
      return Tensor::make(x.data(), DType::kF32, shape);
    };
    auto run = [&](DeltaRuleAlgo algo) {
      std::fill(state.begin(), state.end(), 0.0f);
      be->gated_delta_rule(tensor(out, {T, nv, dv}), tensor(q, {T, nk, dk}), tensor(k, {T, nk, dk}),
                           tensor(v, {T, nv, dv}), tensor(g, {T, nv}), tensor(beta, {T, nv}),
                           tensor(state, {1, nv, dk, dv}), SeqBatch{q_start, slots}, algo);
    };
    const double tr = chunked_only ? NAN : median_seconds(reps, [&] { run(DeltaRuleAlgo::kRecurrent); });
    const double tc = median_seconds(reps, [&] { run(DeltaRuleAlgo::kChunked); });
    fmt::print("{:>6} {:>10.3f} {:>12.0f} {:>10.3f} {:>12.0f} {:>10.1f} {:>8.2f}x\n", T, tr * 1e3, double(T) / tr,
               tc * 1e3, double(T) / tc, double(nv) * chunked_flops(T, dk, dv) / tc / 1e9, tr / tc);
  }
  if (decode_layers > 0) {
    // Each layer's state [1, nv, dk, dv] apart; a token's q/k/v/g/beta reused (the state traffic is what is timed).
    const int64_t L = decode_layers, per_layer = nv * dk * dv;
    std::vector<float> states(static_cast<size_t>(L * per_layer)), q(static_cast<size_t>(nk * dk)), k(q.size()),
        v(static_cast<size_t>(nv * dv)), g(static_cast<size_t>(nv)), beta(g.size()), out(v.size());
    for (float& x : states) x = 0.01f * U(rng);
    for (float& x : q) x = U(rng) / std::sqrt(float(dk));
    for (float& x : k) x = U(rng) / std::sqrt(float(dk));
    for (float& x : v) x = U(rng);
    for (float& x : g) x = -0.05f;
    for (float& x : beta) x = 0.5f;
    const std::vector<int32_t> q_start{0, 1}, slots{0};
    auto tensor = [](float* x, std::initializer_list<int64_t> shape) { return Tensor::make(x, DType::kF32, shape); };
    const double t = median_seconds(reps, [&] {
      for (int64_t tok = 0; tok < decode_tokens; ++tok)
        for (int64_t l = 0; l < L; ++l)
          be->gated_delta_rule(tensor(out.data(), {1, nv, dv}), tensor(q.data(), {1, nk, dk}),
                               tensor(k.data(), {1, nk, dk}), tensor(v.data(), {1, nv, dv}), tensor(g.data(), {1, nv}),
                               tensor(beta.data(), {1, nv}), tensor(states.data() + l * per_layer, {1, nv, dk, dv}),
                               SeqBatch{q_start, slots}, DeltaRuleAlgo::kRecurrent);
    }) / double(decode_tokens);
    const double bytes = 2.0 * double(L * per_layer) * sizeof(float);  // every state read once and written once
    fmt::print("decode: {} layers x {} value heads ({:.1f} MiB of state): {:.3f} ms a token, {:.1f} GB/s of state "
               "read + written\n", L, nv, double(L * per_layer) * sizeof(float) / (1 << 20), t * 1e3, bytes / t / 1e9);
  }
}
