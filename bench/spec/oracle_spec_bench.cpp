// ninfer-bench-spec-oracle: what speculative decoding can gain on a
// bandwidth-bound model, with the drafter taken out of the question. An oracle
// drafter knows the target's greedy continuation and proposes each next token
// right with a chosen probability (the per-draft acceptance rate), so the rows
// measure the engine's verification path alone: decode tok/s against plain
// greedy decode at acceptance 50/70/90% and K = 1…4, and the cost of one
// verification step of K drafts (K + 1 rows) in plain decode steps, K = 1…7
// (every draft right). One run, engines interleaved.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/common/request_waiter.h"
#include "bench/common/synthetic_checkpoint.h"
#include "bench/common/synthetic_model.h"
#include "engine/artifact/artifact.h"
#include "engine/model/model_artifact.h"
#include "engine/runtime/engine.h"

namespace {

using namespace ninfer;

// The continuation the target decodes greedily: ref[p] is the token at position
// p (prompt, then outputs).
using Reference = std::vector<int32_t>;

// Proposes the reference's next tokens, each right with probability `rate` (a
// wrong one is the right one + 1), from a random stream restarted for every
// sequence; needs no features. The reference starts as plain greedy decoding's
// output, but a verification step may commit another token where two logits
// nearly tie (K + 1 rows go through other kernel paths than one row, summing in
// another order): observe() then corrects the reference and counts a
// correction. Since the drafts up to the first correction repeat exactly when
// the request runs again, rerunning until a run needs no correction makes the
// reference this engine's own greedy output, and every draft is right or wrong
// as the rate says.
class OracleDrafter final : public Drafter {
public:
  OracleDrafter(std::shared_ptr<Reference> ref,
                std::shared_ptr<int64_t> corrections, double rate,
                int32_t vocab, uint64_t seed)
      : ref_(std::move(ref)), corrections_(std::move(corrections)), rate_(rate),
        vocab_(vocab), seed_(seed) {}
  const FeatureSpec &features() const override { return none_; }
  int32_t max_draft_tokens() const override { return 64; }
  void add_sequence(SeqId seq) override {
    next_[seq] = 0;
    rng_.seed(seed_);
  }
  void release(SeqId seq) override { next_.erase(seq); }
  uint64_t cache_bytes() const override { return 0; }
  void observe(std::span<const DraftRows> rows) override {
    for (const DraftRows &r : rows) {
      for (size_t i = 0; i < r.next_tokens.size(); ++i) {
        const size_t p = static_cast<size_t>(r.start) + i +
                         1; // position of the committed token next_tokens[i]
        if (p >= ref_->size())
          ref_->resize(p + 1, -1);
        if ((*ref_)[p] != r.next_tokens[i])
          (*ref_)[p] = r.next_tokens[i], ++*corrections_;
      }
      next_[r.seq] = r.start + static_cast<int64_t>(r.next_tokens.size()) + 1;
    }
  }
  void propose(std::span<const SeqId> seqs, int32_t k,
               std::span<int32_t> drafts) override {
    std::bernoulli_distribution right(rate_);
    for (size_t s = 0; s < seqs.size(); ++s)
      for (int32_t i = 0; i < k; ++i) {
        const size_t p = static_cast<size_t>(next_.at(seqs[s]) + i);
        const int32_t want =
            p < ref_->size() && (*ref_)[p] >= 0 ? (*ref_)[p] : 0;
        drafts[s * static_cast<size_t>(k) + static_cast<size_t>(i)] =
            right(rng_) ? want : (want + 1) % vocab_;
      }
  }

private:
  std::shared_ptr<Reference> ref_;
  std::shared_ptr<int64_t> corrections_;
  double rate_;
  int32_t vocab_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  std::map<SeqId, int64_t> next_; // position of the next token to draft
  FeatureSpec none_;
};

struct Row {
  double rate = 0; // 0: plain decode
  int32_t k = 0;
  std::unique_ptr<Engine> engine;
  double decode_s = 0;
  int64_t decoded = 0;
  SpecStats spec = {};
  std::shared_ptr<Reference> ref =
      nullptr; // the oracle's (this row's own greedy output, once settled)
  std::shared_ptr<int64_t> corrections =
      nullptr;         // reference corrections the oracle made
  int settle_runs = 0; // requests run until one needed no correction
  bool stable = true;  // no measured request needed a correction
  bool same = true;    // every output equals plain greedy decoding
  double tok_s() const {
    return decode_s > 0 ? static_cast<double>(decoded) / decode_s : 0;
  }
  std::string label() const {
    return rate == 0 ? "plain"
                     : fmt::format("oracle {:.0f}% K={}", rate * 100, k);
  }
};

std::vector<double> parse_rates(const std::string &csv) {
  std::vector<double> out;
  std::stringstream ss(csv);
  for (std::string v; std::getline(ss, v, ',');)
    out.push_back(std::stod(v));
  return out;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"ninfer-bench-spec-oracle: speculative verification with an "
               "oracle drafter vs plain greedy decode"};
  std::string dir = "/tmp/ninfer-bench-decode", variant = "w4a4",
              rates_csv = "0.5,0.7,0.9";
  double gb = 1.0;
  int threads = 2, tokens = 64, prompt_len = 32, max_k = 4, cost_k = 7,
      passes = 2;
  app.add_option("--dir", dir,
                 "scratch directory of the synthetic model (shared with "
                 "ninfer-bench-decode)");
  app.add_option("--gb", gb,
                 "bf16 weight bytes of the synthetic model in GB (1 GB ≈ 0.5B "
                 "parameters)");
  app.add_option("--variant", variant, "bf16, w4a4 or w4a16")
      ->check(CLI::IsMember({"bf16", "w4a4", "w4a16"}));
  app.add_option("--threads", threads, "CPU backend threads");
  app.add_option("--tokens", tokens, "greedy tokens decoded per request");
  app.add_option("--prompt", prompt_len, "prompt tokens");
  app.add_option("--rates", rates_csv,
                 "per-draft acceptance rates of the oracle, comma-separated");
  app.add_option("--max-k", max_k, "K = 1 .. max-k for each rate");
  app.add_option(
      "--cost-k", cost_k,
      "verification-step cost for K = 1 .. cost-k (every draft right)");
  app.add_option("--passes", passes, "requests per row, the rows interleaved");
  CLI11_PARSE(app, argc, argv);

  const bench::SyntheticModel model = bench::prepare_synthetic_model(
      dir, bench::synthetic_qwen35_config(static_cast<uint64_t>(gb * 1e9)),
      variant != "bf16");
  // Read into memory, as ninfer-serve's CPU backend does (--no-mmap).
  Artifact a = Artifact::open(variant == "bf16" ? model.bf16 : model.nvfp4,
                              {.show_progress = false, .resident = true});
  const ModelConfig c = load_model_config(a);
  const auto acts =
      variant == "w4a16" ? Nvfp4Activations::kFloat : Nvfp4Activations::kNvfp4;
  auto make_engine = [&](DrafterFactory drafter, int32_t k) {
    EngineOptions o{.max_context = prompt_len + tokens + 16,
                    .prefill_chunk = 512,
                    .max_concurrency = 1,
                    .kv_dtype = DType::kBF16,
                    .threads = threads,
                    .nvfp4_activations = acts,
                    .greedy = true};
    o.drafter = std::move(drafter);
    o.draft_tokens = std::max(k, 1);
    return std::make_unique<Engine>(a, c, o);
  };
  std::vector<int32_t> prompt;
  for (int i = 0; i < prompt_len; ++i)
    prompt.push_back((i * 7919 + 104729) % static_cast<int32_t>(c.vocab_size));
  auto run = [&](Engine &e) { return bench::run_greedy(e, prompt, tokens); };

  // The reference: plain greedy decoding of the prompt (also the warm-up that
  // pages the weights in).
  std::vector<Row> rows;
  rows.push_back({.rate = 0, .k = 0, .engine = make_engine(nullptr, 0)});
  auto ref = std::make_shared<Reference>(prompt);
  {
    auto w = run(*rows[0].engine);
    ref->insert(ref->end(), w->tokens.begin(), w->tokens.end());
  }
  std::vector<std::pair<double, int32_t>> cases;
  for (double rate : parse_rates(rates_csv))
    for (int32_t k = 1; k <= max_k; ++k)
      cases.push_back({rate, k});
  for (int32_t k = 1; k <= cost_k; ++k)
    cases.push_back({1.0, k});
  for (const auto &[rate, k] : cases) {
    const uint64_t seed = 1000 + static_cast<uint64_t>(k) * 131 +
                          static_cast<uint64_t>(rate * 1000);
    auto row_ref = std::make_shared<Reference>(*ref);
    auto corrections = std::make_shared<int64_t>(0);
    DrafterFactory f = [row_ref, corrections, rate, seed,
                        vocab = static_cast<int32_t>(c.vocab_size)](
                           WeightStore &, const DrafterLimits &) {
      return std::unique_ptr<Drafter>(std::make_unique<OracleDrafter>(
          row_ref, corrections, rate, vocab, seed));
    };
    rows.push_back({.rate = rate,
                    .k = k,
                    .engine = make_engine(std::move(f), k),
                    .ref = row_ref,
                    .corrections = corrections});
    // Warm-up (scratch buffers for K + 1 rows), repeated until the oracle's
    // reference is this engine's output.
    Row &r = rows.back();
    for (int64_t before = -1; before != *r.corrections && r.settle_runs < 20;
         ++r.settle_runs) {
      before = *r.corrections;
      run(*r.engine);
    }
  }
  const std::vector<int32_t> want(ref->begin() + prompt_len, ref->end());
  for (int p = 0; p < passes; ++p) {
    std::fprintf(stderr, "pass %d of %d (%zu rows)\n", p + 1, passes,
                 rows.size());
    for (Row &r : rows) {
      const int64_t before = r.corrections ? *r.corrections : 0;
      auto w = run(*r.engine);
      r.decode_s += w->result.timings.decode_s;
      r.decoded += w->result.completion_tokens - 1;
      r.spec.add(w->result.spec);
      r.same = r.same && w->tokens == want;
      r.stable = r.stable && (!r.corrections || *r.corrections == before);
    }
  }

  const Row &plain = rows.front();
  const double plain_step_ms =
      1e3 * plain.decode_s / static_cast<double>(plain.decoded);
  fmt::print(
      "model: {} ({}), {} layers, hidden {}, vocab {}; {} threads; prompt {} "
      "tokens, {} greedy tokens × {} "
      "passes per row\nplain decode: {:.2f} tok/s ({:.2f} ms per step)\n\n",
      a.path(), variant, c.num_layers, c.hidden_size, c.vocab_size, threads,
      prompt_len, tokens, passes, plain.tok_s(), plain_step_ms);
  fmt::print("| drafter | acceptance rate | tokens per step | decode tok/s | "
             "speedup | verify step (× plain step) | "
             "output = plain |\n|---|---|---|---|---|---|---|\n");
  bool all_stable = true;
  for (const Row &r : rows) {
    all_stable = all_stable && r.stable;
    if (r.rate == 0) {
      // Plain decoding's measured requests against its first (the reference): a
      // determinism check.
      fmt::print("| plain | – | 1 | {:.2f} | 1.00× | 1.00 | {} |\n", r.tok_s(),
                 r.same ? "yes (as its first run)"
                        : "NO: not as its first run");
      continue;
    }
    const double step_ms =
        1e3 * r.decode_s /
        static_cast<double>(std::max<int64_t>(r.spec.verify_steps, 1));
    fmt::print(
        "| {} | {:.3f} | {:.3f} | {:.2f} | {:.2f}× | {:.2f} | {} |\n",
        r.label(), r.spec.acceptance_rate(), r.spec.mean_acceptance_length(),
        r.tok_s(), r.tok_s() / plain.tok_s(), step_ms / plain_step_ms,
        r.same ? "yes" : fmt::format("no (settled in {} runs)", r.settle_runs));
  }
  if (!all_stable)
    std::fprintf(stderr, "a measured request needed a reference correction: "
                         "the rows are not exact\n");
  return all_stable ? 0 : 1;
}
