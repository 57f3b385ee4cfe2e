// ninfer-bench-prefix: time to first token with and without prefix reuse, in one run on one model: a repeated prompt,
// a multi-turn chat (each turn = the previous prompt + answer + a new message), and prompts that share only a system
// prompt. Every warm answer is checked against the cold engine's, token for token.
#include <algorithm>
#include <cstdio>
#include <random>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/common/request_waiter.h"
#include "engine/artifact/artifact.h"
#include "engine/model/model_artifact.h"
#include "engine/runtime/engine.h"

namespace {

using namespace ninfer;

struct Answer {
  std::vector<int32_t> tokens;
  RequestResult result;
};

Answer ask(Engine& e, const std::vector<int32_t>& prompt, int64_t max_tokens) {
  auto w = bench::run_greedy(e, prompt, max_tokens);
  return {w->tokens, w->result};
}

std::vector<int32_t> random_tokens(std::mt19937& rng, int64_t n, int32_t vocab) {
  std::uniform_int_distribution<int32_t> d(0, vocab - 1);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = d(rng);
  return t;
}

struct Row {
  std::string scenario;
  int64_t prompt = 0, cached = 0;
  double cold_ttft = 0, warm_ttft = 0;
  bool same = true;
};

void print(const std::vector<Row>& rows) {
  std::printf("| scenario | prompt tokens | cached | TTFT cold (ms) | TTFT warm (ms) | speedup | same tokens |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---|\n");
  for (const Row& r : rows)
    std::printf("| %s | %lld | %lld | %.1f | %.1f | %.2fx | %s |\n", r.scenario.c_str(), static_cast<long long>(r.prompt),
                static_cast<long long>(r.cached), r.cold_ttft * 1e3, r.warm_ttft * 1e3, r.cold_ttft / r.warm_ttft,
                r.same ? "yes" : "NO");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ninfer-bench-prefix: TTFT with and without prefix reuse (repeated prompt, multi-turn chat, shared "
               "system prompt)"};
  std::string model = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";
  std::string kv = "int8";
  int threads = 2;
  int64_t prompt_len = 1024, answer = 32, message = 64, system = 512;
  int turns = 4, repeats = 3;
  app.add_option("--model", model, "artifact (default: the shipped ninfer-tiny)");
  app.add_option("--kv-dtype", kv, "KV cache element type")->check(CLI::IsMember({"int8", "bf16", "f32"}));
  app.add_option("--threads", threads, "CPU backend threads");
  app.add_option("--prompt", prompt_len, "tokens of the repeated prompt and of the first chat turn");
  app.add_option("--answer", answer, "output tokens per request");
  app.add_option("--message", message, "new tokens each chat turn adds after the previous answer");
  app.add_option("--system", system, "tokens of the shared system prompt");
  app.add_option("--turns", turns, "chat turns");
  app.add_option("--repeats", repeats, "repeated-prompt requests timed per engine (median)");
  CLI11_PARSE(app, argc, argv);
  try {
    Artifact a = Artifact::open(model);
    ModelConfig c = load_model_config(a);
    const DType kv_dtype = kv == "int8" ? DType::kI8 : kv == "bf16" ? DType::kBF16 : DType::kF32;
    const int64_t max_context = std::max<int64_t>(prompt_len, system + message) + turns * (answer + message) + answer + 16;
    auto options = [&](bool prefix) {
      return EngineOptions{.max_context = max_context, .prefill_chunk = 2048, .max_concurrency = 1,
                           .kv_dtype = kv_dtype, .threads = threads, .prefix_cache = prefix};
    };
    Engine cold(a, c, options(false)), warm(a, c, options(true));
    std::fprintf(stderr, "ninfer-bench-prefix: %s, %s KV, %d threads, %s linear-attention layers\n", model.c_str(),
                 kv.c_str(), threads, c.num_linear_attention_layers() > 0 ? "with" : "no");
    std::mt19937 rng(7);
    std::vector<Row> rows;
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };

    {  // the same prompt again
      const auto p = random_tokens(rng, prompt_len, static_cast<int32_t>(c.vocab_size));
      const Answer first = ask(warm, p, answer);  // fills the cache
      ask(cold, p, answer);                       // warms the cold engine's pages alike
      Row r{"repeated prompt", prompt_len};
      std::vector<double> tc, tw;
      for (int i = 0; i < repeats; ++i) {
        const Answer ca = ask(cold, p, answer), wa = ask(warm, p, answer);
        tc.push_back(ca.result.timings.ttft_s);
        tw.push_back(wa.result.timings.ttft_s);
        r.cached = wa.result.cached_tokens;
        r.same = r.same && ca.tokens == wa.tokens && wa.tokens == first.tokens;
      }
      r.cold_ttft = median(tc), r.warm_ttft = median(tw);
      rows.push_back(r);
    }
    {  // a chat: each turn extends the previous prompt with its answer and a new message
      std::vector<int32_t> p = random_tokens(rng, prompt_len, static_cast<int32_t>(c.vocab_size));
      for (int t = 0; t < turns; ++t) {
        const Answer ca = ask(cold, p, answer), wa = ask(warm, p, answer);
        rows.push_back({fmt::format("chat turn {}", t + 1), static_cast<int64_t>(p.size()), wa.result.cached_tokens,
                        ca.result.timings.ttft_s, wa.result.timings.ttft_s, ca.tokens == wa.tokens});
        p.insert(p.end(), ca.tokens.begin(), ca.tokens.end());
        const auto m = random_tokens(rng, message, static_cast<int32_t>(c.vocab_size));
        p.insert(p.end(), m.begin(), m.end());
      }
    }
    {  // different user messages after one system prompt
      const auto sys = random_tokens(rng, system, static_cast<int32_t>(c.vocab_size));
      for (int u = 0; u < 3; ++u) {
        std::vector<int32_t> p = sys;
        const auto m = random_tokens(rng, message, static_cast<int32_t>(c.vocab_size));
        p.insert(p.end(), m.begin(), m.end());
        const Answer ca = ask(cold, p, answer), wa = ask(warm, p, answer);
        rows.push_back({fmt::format("shared system prompt, user {}", u + 1), static_cast<int64_t>(p.size()),
                        wa.result.cached_tokens, ca.result.timings.ttft_s, wa.result.timings.ttft_s,
                        ca.tokens == wa.tokens});
      }
    }
    print(rows);
    const bool all_same = std::all_of(rows.begin(), rows.end(), [](const Row& r) { return r.same; });
    return all_same ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ninfer-bench-prefix: %s\n", e.what());
    return 1;
  }
}
