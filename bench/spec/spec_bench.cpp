// ninfer-bench-spec: speculative decoding on the default model in one run: plain greedy decode vs every drafter of the
// registry (MTP K=1..4, full and draft lm_head, DFlash2 K=7 when registered): acceptance, tok/s, speedup, where the time
// goes (drafter vs target), and whether every output equals plain decoding token for token.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/common/request_waiter.h"
#include "engine/artifact/artifact.h"
#include "engine/core/error.h"
#include "engine/model/model_artifact.h"
#include "engine/runtime/engine.h"
#include "engine/speculative/drafter_registry.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

using namespace ninfer;
using Clock = std::chrono::steady_clock;

// The model card's sample prompts (tools/train_tiny/report.py), through the artifact's chat template.
const char* const kPrompts[] = {
    "Write a Python function `fibonacci(n)`: Return the n-th Fibonacci number.",
    "Continue this Python code from `json/decoder.py`:\n\n```python\ndef _decode_uXXXX(s, pos):\n```",
    "Write a Python function `read_lines(path)`: Read a text file and return its lines.",
    "Continue this C code from `stdio.h`:\n\n```c\nextern int fclose (FILE *__stream);\n```",
};

// One row of the table. Adding a drafter to the bench is one entry of variants() below.
struct Variant {
  std::string method;  // "" = plain decode
  int32_t k = 0;
  bool lm_head_draft = false;
  MtpOptions mtp;  // mtp: which hidden states (docs/mtp.md)
  std::string label() const {
    if (method.empty()) return "plain";
    return fmt::format("{} K={}{}{}", method, k, lm_head_draft ? " draft head" : "",
                       mtp.hidden == MtpHidden::kPreFinalNorm ? " pre-norm hidden" : "");
  }
};

std::vector<Variant> variants(int max_k) {
  std::vector<Variant> v{{}};
  for (int32_t k = 1; k <= max_k; ++k) v.push_back({"mtp", k, false, {}}), v.push_back({"mtp", k, true, {}});
  // The hidden-state question of docs/mtp.md, end to end: the target's pre-final-norm residual as the MTP input.
  v.push_back({"mtp", std::min(3, max_k), false, {.hidden = MtpHidden::kPreFinalNorm}});
  const std::vector<std::string> known = drafter_methods();
  if (std::find(known.begin(), known.end(), "dflash2") != known.end())
    v.push_back({"dflash2", 7, false, {}}), v.push_back({"dflash2", 7, true, {}});
  return v;
}

// Times the drafter's calls (observe + propose) on the engine thread.
class TimedDrafter final : public Drafter {
 public:
  TimedDrafter(std::unique_ptr<Drafter> inner, double* seconds) : inner_(std::move(inner)), seconds_(seconds) {}
  const FeatureSpec& features() const override { return inner_->features(); }
  int32_t max_draft_tokens() const override { return inner_->max_draft_tokens(); }
  void add_sequence(SeqId seq) override { inner_->add_sequence(seq); }
  void release(SeqId seq) override { inner_->release(seq); }
  uint64_t cache_bytes() const override { return inner_->cache_bytes(); }
  void observe(std::span<const DraftRows> rows) override {
    auto t = Clock::now();
    inner_->observe(rows);
    *seconds_ += std::chrono::duration<double>(Clock::now() - t).count();
  }
  void propose(std::span<const SeqId> seqs, int32_t k, std::span<int32_t> drafts) override {
    auto t = Clock::now();
    inner_->propose(seqs, k, drafts);
    *seconds_ += std::chrono::duration<double>(Clock::now() - t).count();
  }

 private:
  std::unique_ptr<Drafter> inner_;
  double* seconds_;
};

using Collect = bench::RequestWaiter;

struct Measured {
  Variant v;
  double decode_s = 0, draft_s = 0;
  int64_t decoded = 0;  // completion tokens after the first (the ones decode_s covers)
  SpecStats spec;
  std::vector<std::vector<int32_t>> outputs;
  double tok_s() const { return decode_s > 0 ? static_cast<double>(decoded) / decode_s : 0.0; }
};

// One engine per variant, all alive at once, so that the passes can interleave the variants: the machine's load
// drifts (other processes), and interleaving spreads the drift over every row alike.
struct Bench {
  Bench(const Variant& v, const Artifact& a, const ModelConfig& c, int threads) {
    m.v = v;
    EngineOptions o{.max_context = 1024, .prefill_chunk = 512, .max_concurrency = 1, .kv_dtype = DType::kF32,
                    .threads = threads, .greedy = true};
    if (!v.method.empty()) {
      DrafterFactory inner = make_drafter_factory(v.method, a, c, v.lm_head_draft, v.mtp);
      double* sink = &m.draft_s;
      o.drafter = [inner, sink](WeightStore& w, const DrafterLimits& l) -> std::unique_ptr<Drafter> {
        return std::make_unique<TimedDrafter>(inner(w, l), sink);
      };
      o.draft_tokens = v.k;
    }
    engine = std::make_unique<Engine>(a, c, o);
  }

  std::shared_ptr<Collect> run(const std::vector<int32_t>& prompt, int tokens) {
    // No stop ids: every variant decodes the same number of tokens.
    return bench::run_greedy(*engine, prompt, tokens, m.v.label());
  }

  // A measured request; the draft time of the request is what the drafter spent during it (its prefill-time
  // observe() included: a few rows per prompt).
  void measure(const std::vector<int32_t>& prompt, int tokens, bool keep_output) {
    const double draft_before = m.draft_s;
    auto w = run(prompt, tokens);
    m.decode_s += w->result.timings.decode_s;
    m.decoded += w->result.completion_tokens - 1;
    m.spec.add(w->result.spec);
    draft_total += m.draft_s - draft_before;
    if (keep_output) m.outputs.push_back(w->tokens);
  }

  Measured m;
  double draft_total = 0;
  std::unique_ptr<Engine> engine;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ninfer-bench-spec: plain greedy decode vs speculative decoding (MTP, DFlash2) on one model"};
  std::string model = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";
  int threads = 2, tokens = 128, max_k = 4, repeats = 2;
  app.add_option("--model", model, "artifact (default: the shipped ninfer-tiny)");
  app.add_option("--threads", threads, "CPU backend threads");
  app.add_option("--tokens", tokens, "tokens decoded per prompt (greedy, stop tokens ignored)");
  app.add_option("--max-k", max_k, "MTP rows for K = 1 .. max-k");
  app.add_option("--repeats", repeats, "passes over the prompts per variant (timings summed)");
  std::vector<std::string> only;
  app.add_option("--variant", only, "run only these rows (repeatable), e.g. --variant plain --variant 'mtp K=3'");
  CLI11_PARSE(app, argc, argv);

  Artifact a = Artifact::open(model, {.show_progress = false, .resident = true});  // as ninfer-serve on the CPU
  ModelConfig c = load_model_config(a);
  Tokenizer tok = Tokenizer::from_json(std::string(*a.blob("tokenizer.json")));
  ChatTemplate chat = ChatTemplate::from_template_text(a.metadata()["chat_template"].get<std::string>());
  std::vector<std::vector<int32_t>> prompts;
  for (const char* p : kPrompts) {
    nlohmann::ordered_json msgs = nlohmann::ordered_json::array({{{"role", "user"}, {"content", p}}});
    prompts.push_back(tok.encode_segments(chat.render(msgs, nlohmann::ordered_json::array(), {}).segments));
  }

  std::vector<std::unique_ptr<Bench>> benches;
  std::vector<std::string> skipped;
  for (const Variant& v : variants(max_k)) {
    if (!only.empty() && std::find(only.begin(), only.end(), v.label()) == only.end()) continue;
    try {
      benches.push_back(std::make_unique<Bench>(v, a, c, threads));
    } catch (const Error& e) {  // a registered method this artifact cannot serve (e.g. no dflash2 section)
      if (v.method.empty()) throw;
      skipped.push_back(fmt::format("{}: skipped: {}", v.label(), e.what()));
      continue;
    }
    benches.back()->run(prompts[0], 8);  // warm-up: pages the weights in, grows the scratch buffers
  }
  for (int rep = 0; rep < repeats; ++rep) {
    std::fprintf(stderr, "pass %d of %d\n", rep + 1, repeats);
    for (const auto& p : prompts)
      for (auto& b : benches) b->measure(p, tokens, rep == 0);
  }
  std::vector<Measured> rows;
  for (auto& b : benches) {
    b->m.draft_s = b->draft_total;
    rows.push_back(b->m);
  }
  if (rows.empty() || !rows.front().v.method.empty()) {
    std::fprintf(stderr, "--variant: the rows must include plain (the baseline)\n");
    return 2;
  }
  const Measured& plain = rows.front();
  fmt::print("model {} ({} layers, hidden {}, vocab {}), {} prompts × {} greedy tokens × {} passes, {} threads\n\n",
             a.path(), c.num_layers, c.hidden_size, c.vocab_size, prompts.size(), tokens, repeats, threads);
  // Where the time goes: per verification step, the drafter's calls and the rest (the target's forward over the
  // K + 1 rows, sampling, bookkeeping), against one plain decode step.
  const double plain_step_ms = 1e3 * plain.decode_s / static_cast<double>(plain.decoded);
  fmt::print("plain decode step: {:.2f} ms\n\n", plain_step_ms);
  fmt::print("| variant | acceptance rate | mean acceptance length | accepted by position | decode tok/s | speedup | "
             "drafter ms / step | target ms / step (× plain step) | output = plain |\n"
             "|---|---|---|---|---|---|---|---|---|\n");
  for (const Measured& m : rows) {
    const bool same = m.outputs == plain.outputs;
    if (m.v.method.empty()) {
      fmt::print("| plain | – | 1 | – | {:.1f} | 1.00× | – | {:.2f} (1.00×) | – |\n", m.tok_s(), plain_step_ms);
      continue;
    }
    std::vector<std::string> per;
    for (int64_t n : m.spec.accepted_at)
      per.push_back(fmt::format("{:.2f}", m.spec.verify_steps ? double(n) / double(m.spec.verify_steps) : 0.0));
    const double steps = static_cast<double>(std::max<int64_t>(m.spec.verify_steps, 1));
    const double draft_ms = 1e3 * m.draft_s / steps, target_ms = 1e3 * (m.decode_s - m.draft_s) / steps;
    fmt::print("| {} | {:.3f} | {:.3f} | {} | {:.1f} | {:.2f}× | {:.2f} | {:.2f} ({:.2f}×) | {} |\n", m.v.label(),
               m.spec.acceptance_rate(), m.spec.mean_acceptance_length(), fmt::join(per, " / "), m.tok_s(),
               m.tok_s() / plain.tok_s(), draft_ms, target_ms, target_ms / plain_step_ms, same ? "yes" : "NO");
  }
  for (const std::string& s : skipped) fmt::print("\n{}\n", s);
  bool all_same = true;
  for (const Measured& m : rows) all_same = all_same && m.outputs == plain.outputs;
  return all_same ? 0 : 1;
}
