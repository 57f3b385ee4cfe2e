// ninfer-bench-decode: decode tok/s (batch 1 and batch 8) and prefill tok/s of the CPU engine on a synthetic
// Qwen3.5-shaped bf16 model, next to the memory-bandwidth roofline measured in the same run.
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/common/bandwidth.h"
#include "bench/common/synthetic_checkpoint.h"
#include "engine/artifact/artifact.h"
#include "engine/model/model_artifact.h"
#include "engine/pack/packer.h"
#include "engine/runtime/engine.h"

namespace {

using namespace ninfer;

class Waiter : public RequestObserver {
 public:
  void on_tokens(std::span<const OutputToken>) override {}
  void on_finish(const RequestResult& r) override {
    std::lock_guard lock(mu_);
    result = r;
    done = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done; });
  }
  RequestResult result;
  bool done = false;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

std::vector<RequestResult> run(Engine& e, int batch, int prompt_len, int max_tokens, int vocab) {
  std::vector<std::shared_ptr<Waiter>> ws;
  for (int b = 0; b < batch; ++b) {
    EngineRequest r;
    for (int i = 0; i < prompt_len; ++i) r.prompt.push_back((i * 7919 + b * 104729) % vocab);
    r.sampling.greedy = true;
    r.max_tokens = max_tokens;
    auto w = std::make_shared<Waiter>();
    e.submit(r, w);
    ws.push_back(w);
  }
  std::vector<RequestResult> out;
  for (auto& w : ws) w->wait(), out.push_back(w->result);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ninfer-bench-decode: CPU decode/prefill throughput vs the memory-bandwidth roofline"};
  std::string dir = "/tmp/ninfer-bench-decode";
  double gb = 1.0;
  int threads = 2, tokens = 32, prompt = 512, batch = 8;
  app.add_option("--dir", dir, "scratch directory (the synthetic checkpoint and artifact are kept for reruns)");
  app.add_option("--gb", gb, "bf16 weight bytes of the synthetic model in GB (1 GB ≈ 0.5B parameters)");
  app.add_option("--threads", threads, "CPU backend threads");
  app.add_option("--tokens", tokens, "decoded tokens per request");
  app.add_option("--prompt", prompt, "prompt tokens of the prefill measurement");
  app.add_option("--batch", batch, "sequences of the batched decode measurement");
  CLI11_PARSE(app, argc, argv);

  const std::string hf = dir + "/hf", art = dir + "/model.ninfer";
  auto config_json = bench::synthetic_qwen35_config(static_cast<uint64_t>(gb * 1e9));
  if (!std::filesystem::exists(art)) {
    bench::write_synthetic_checkpoint(hf, config_json);
    pack_hf_checkpoint({.hf_dir = hf, .output = art, .show_progress = true});
    std::filesystem::remove_all(hf);
  }
  Artifact a = Artifact::open(art);
  ModelConfig c = load_model_config(a);
  uint64_t weight_bytes = 0;
  for (const auto& t : a.tensors()) weight_bytes += t.bytes;
  // Bytes one decode step streams: every weight once (the embedding table too: it is the tied lm_head),
  // except the embedding lookup itself, which reads one row.
  const uint64_t bytes_per_token = weight_bytes;

  Engine e(a, c, {.max_context = prompt + tokens + 16, .prefill_chunk = 2048, .max_concurrency = batch,
                  .kv_dtype = DType::kBF16, .threads = threads});
  std::fprintf(stderr, "warming up (pages the weights in)...\n");
  run(e, 1, 8, 2, static_cast<int>(c.vocab_size));

  auto pre = run(e, 1, prompt, 1, static_cast<int>(c.vocab_size));
  const double prefill_tok_s = prompt / pre[0].timings.prefill_s;
  auto one = run(e, 1, 16, tokens, static_cast<int>(c.vocab_size));
  const double decode1 = (tokens - 1) / one[0].timings.decode_s;
  auto many = run(e, batch, 16, tokens, static_cast<int>(c.vocab_size));
  double window = 0;
  for (const auto& r : many) window = std::max(window, r.timings.decode_s);
  const double decode_b = batch * (tokens - 1) / window;

  const double copy_bw = bench::memcpy_bandwidth(size_t(1) << 30, threads, 5);
  const double read_bw = bench::read_bandwidth(size_t(1) << 30, threads, 5);
  const double roofline = copy_bw / static_cast<double>(bytes_per_token);

  fmt::print("| measurement | value |\n|---|---|\n");
  fmt::print("| model | synthetic qwen3_5, {} layers ({} GDN + {} attention), hidden {}, vocab {}, {:.3f} GB bf16 |\n",
             c.num_layers, c.num_linear_attention_layers(), c.num_full_attention_layers(), c.hidden_size,
             c.vocab_size, weight_bytes / 1e9);
  fmt::print("| backend | {} |\n", e.backend_name());
  fmt::print("| memcpy bandwidth ({} threads) | {:.2f} GB/s |\n", threads, copy_bw / 1e9);
  fmt::print("| read bandwidth ({} threads) | {:.2f} GB/s |\n", threads, read_bw / 1e9);
  fmt::print("| bytes read per decoded token (batch 1) | {:.3f} GB |\n", bytes_per_token / 1e9);
  fmt::print("| roofline, batch 1 (memcpy bandwidth / bytes per token) | {:.2f} tok/s |\n", roofline);
  const double read_roofline = read_bw / static_cast<double>(bytes_per_token);
  fmt::print("| roofline, batch 1 (read bandwidth / bytes per token) | {:.2f} tok/s |\n", read_roofline);
  fmt::print("| decode, batch 1 | {:.2f} tok/s ({:.0f}% of the memcpy roofline, {:.0f}% of the read roofline) |\n",
             decode1, 100.0 * decode1 / roofline, 100.0 * decode1 / read_roofline);
  fmt::print("| decode, batch {} (sum over sequences) | {:.2f} tok/s |\n", batch, decode_b);
  fmt::print("| prefill, {} tokens | {:.1f} tok/s |\n", prompt, prefill_tok_s);
  return 0;
}
