// ninfer-bench-constrain: what structured output costs. For a new schema, the wait until its first token (ninfer-tiny,
// in the engine) or first mask (a 248k-token vocabulary, the Qwen3.5 tokenizer, along random constrained outputs);
// and the grammar's mask time per output token against ninfer-tiny's plain decode step. Cold (a schema's first
// outputs) three ways: every vocabulary walk in the step (no worker); the request waiting until the worker has
// precomputed the whole grammar (the behaviour before the hybrid); the hybrid (the request starts at once, the step
// walks what the worker has not yet). Warm: the same outputs again (cached masks).
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <cstdio>
#include <functional>
#include <random>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/common/request_waiter.h"
#include "engine/artifact/artifact.h"
#include "engine/constrain/grammar_constraint.h"
#include "engine/constrain/json_grammar.h"
#include "engine/core/error.h"
#include "engine/model/model_artifact.h"
#include "engine/runtime/engine.h"
#include "engine/tokenizer/tokenizer.h"

namespace ninfer {
namespace {

using Clock = std::chrono::steady_clock;
using ojson = nlohmann::ordered_json;

const char* kSchema =
    R"({"type":"object","properties":{"name":{"type":"string","maxLength":24},"age":{"type":"integer"},)"
    R"("tags":{"type":"array","items":{"type":"string","maxLength":12},"maxItems":4},"ok":{"type":"boolean"}},)"
    R"("required":["name","age","tags","ok"]})";

// Forwards to a constraint and adds the time of every call to `seconds`.
class TimedConstraint final : public LogitConstraint {
 public:
  TimedConstraint(std::shared_ptr<LogitConstraint> inner, double* seconds) : inner_(std::move(inner)), seconds_(seconds) {}
  void mask(std::span<float> logits) override { time([&] { inner_->mask(logits); }); }
  void accept(int32_t id) override { time([&] { inner_->accept(id); }); }

 private:
  template <typename F>
  void time(F&& f) {
    const auto t0 = Clock::now();
    f();
    *seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  std::shared_ptr<LogitConstraint> inner_;
  double* seconds_;
};

struct Row {
  std::string label;
  double first_ms = -1;    // the first request's wait for its first token (engine) or first mask (walks), from the
                           // grammar's creation; -1: not a schema's first request
  double first_output_ms = -1;  // likewise, until the first request's last token (engine: total; walks: mask time)
  double step_ms = 0;      // decode step (engine timings)
  double mask_us = 0;      // grammar time per output token
  int64_t tokens = 0;
  size_t walks = 0, waits = 0, misses = 0;  // vocabulary walks in the step, waits there for the worker's walk of a
                                            // suffix, and state-cache misses during the row
  double worker_ms = -1;                    // the grammar's whole precomputation on the worker (-1: not measured)
};

// A grammar of `schema` over `vocab`; `precompute`: queued on the mask workers (not waited for).
std::shared_ptr<constrain::CompiledGrammar> grammar_of(const constrain::Grammar& g,
                                                       std::shared_ptr<const constrain::TokenVocabulary> vocab,
                                                       bool precompute) {
  auto cg = std::make_shared<constrain::CompiledGrammar>(g, std::move(vocab));
  if (precompute) cg->precompute_async("bench");
  return cg;
}

// How a cold row starts: no worker, the worker with the request waiting for all of it, or the worker beside it.
enum class Cold { kNoWorker, kWaitForWorker, kHybrid };

// The grammar for a row, and the seconds spent waiting for it before the first request (kWaitForWorker).
std::pair<std::shared_ptr<constrain::CompiledGrammar>, double> prepare(
    const constrain::Grammar& g, const std::shared_ptr<const constrain::TokenVocabulary>& vocab, Cold how) {
  const auto t0 = Clock::now();
  auto cg = grammar_of(g, vocab, how != Cold::kNoWorker);
  if (how == Cold::kWaitForWorker && !cg->wait_precomputed(std::chrono::minutes(10)))
    throw std::runtime_error("the worker took over 10 minutes");
  return {cg, how == Cold::kWaitForWorker ? std::chrono::duration<double>(Clock::now() - t0).count() : 0.0};
}

Row engine_row(Engine& engine, const std::string& label, const std::vector<std::vector<int32_t>>& prompts, int tokens,
               const std::shared_ptr<constrain::CompiledGrammar>& grammar, int32_t end_id, double waited_s = -1) {
  Row row{label};
  const size_t walks0 = grammar ? grammar->masks().runtime_walks() : 0,
               waits0 = grammar ? grammar->masks().runtime_waits() : 0,
               misses0 = grammar ? grammar->masks().state_misses() : 0;
  double mask_s = 0, decode_s = 0;
  for (const auto& p : prompts) {
    EngineRequest r;
    r.prompt = p;
    r.sampling.greedy = true;
    r.max_tokens = tokens;
    if (grammar) {
      r.stop_ids = {end_id};
      r.constraint = std::make_shared<TimedConstraint>(
          std::make_shared<constrain::GrammarConstraint>(grammar, constrain::GrammarConstraintOptions{{end_id}, {}}), &mask_s);
    }
    auto w = std::make_shared<bench::RequestWaiter>();
    engine.submit(r, w);
    w->wait();
    if (w->result.reason == FinishReason::kError) throw std::runtime_error(label + ": " + w->result.error);
    decode_s += w->result.timings.decode_s;
    if (waited_s >= 0 && &p == &prompts.front()) {
      row.first_ms = 1e3 * (waited_s + w->result.timings.ttft_s);
      row.first_output_ms = 1e3 * (waited_s + w->result.timings.total_s);
    }
    row.tokens += w->result.completion_tokens;
  }
  const int64_t steps = row.tokens - static_cast<int64_t>(prompts.size());  // the first token of each comes from prefill
  row.step_ms = steps > 0 ? 1e3 * decode_s / static_cast<double>(steps) : 0;
  row.mask_us = row.tokens > 0 ? 1e6 * mask_s / static_cast<double>(row.tokens) : 0;
  if (grammar) {
    row.walks = grammar->masks().runtime_walks() - walks0, row.misses = grammar->masks().state_misses() - misses0;
    row.waits = grammar->masks().runtime_waits() - waits0;
    if (!grammar->precomputing() && grammar->precompute_stats().positions > 0)
      row.worker_ms = 1e3 * grammar->precompute_stats().seconds;
  }
  return row;
}

// Random constrained outputs over a large vocabulary: the mask of every step into a logits row of `logit_width`.
// `gap_ms` between a token's accept() and the next mask (not timed): the model's step, run on an accelerator while
// the CPU is free for the mask workers.
Row walk_row(const std::string& label, const std::shared_ptr<constrain::CompiledGrammar>& g, int32_t end_id,
             int outputs, int max_tokens, size_t logit_width, uint32_t seed, double gap_ms, double waited_s = -1) {
  Row row{label};
  const size_t walks0 = g->masks().runtime_walks(), waits0 = g->masks().runtime_waits(),
               misses0 = g->masks().state_misses();
  std::mt19937 rng(seed);
  std::vector<float> logits(logit_width);
  double mask_s = 0;
  for (int o = 0; o < outputs; ++o) {
    constrain::GrammarConstraint c(g, {{end_id}, {}});
    for (int t = 0; t < max_tokens; ++t) {
      std::fill(logits.begin(), logits.end(), 0.0f);
      const auto t0 = Clock::now();
      c.mask(logits);
      mask_s += std::chrono::duration<double>(Clock::now() - t0).count();
      if (waited_s >= 0 && o == 0 && t == 0) row.first_ms = 1e3 * (waited_s + mask_s);
      std::vector<int32_t> ids;  // prefer short tokens and ending, so outputs finish inside max_tokens
      for (size_t id = 0; id < logits.size(); ++id)
        if (logits[id] == 0.0f) ids.push_back(static_cast<int32_t>(id));
      int32_t pick = ids[rng() % ids.size()];
      if (std::find(ids.begin(), ids.end(), end_id) != ids.end()) pick = end_id;
      const auto t1 = Clock::now();
      c.accept(pick);
      mask_s += std::chrono::duration<double>(Clock::now() - t1).count();
      if (gap_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(gap_ms));
      ++row.tokens;
      if (pick == end_id) break;
    }
    if (waited_s >= 0 && o == 0) row.first_output_ms = 1e3 * (waited_s + mask_s);
  }
  row.mask_us = 1e6 * mask_s / static_cast<double>(row.tokens);
  row.walks = g->masks().runtime_walks() - walks0, row.misses = g->masks().state_misses() - misses0;
  row.waits = g->masks().runtime_waits() - waits0;
  if (!g->precomputing() && g->precompute_stats().positions > 0) row.worker_ms = 1e3 * g->precompute_stats().seconds;
  return row;
}

using RunRow = std::function<Row(const std::string&, const std::shared_ptr<constrain::CompiledGrammar>&, double)>;

// Cold three ways, then warm (the fully precomputed grammar again). The hybrid's grammar is dropped after its row, so
// its worker stops (mid-walk) before the next row starts.
void cold_and_warm(std::vector<Row>& rows, const std::string& label, const constrain::Grammar& g,
                   const std::shared_ptr<const constrain::TokenVocabulary>& vocab, const RunRow& run) {
  {
    auto [cg, waited] = prepare(g, vocab, Cold::kNoWorker);
    rows.push_back(run(label + ", cold, walks in the step (no worker)", cg, waited));
  }
  {
    auto [cg, waited] = prepare(g, vocab, Cold::kHybrid);
    rows.push_back(run(label + ", cold, hybrid (after)", cg, waited));
  }
  auto [pre, waited] = prepare(g, vocab, Cold::kWaitForWorker);
  rows.push_back(run(label + ", cold, waits for the whole precompute (before)", pre, waited));
  rows.push_back(run(label + ", warm", pre, -1));
}

}  // namespace
}  // namespace ninfer

int main(int argc, char** argv) {
  using namespace ninfer;
  CLI::App app{"ninfer-bench-constrain: structured output's mask time per token, against the decode step"};
  std::string model = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";
  std::string big = std::string(NINFER_BINARY_DIR) + "/tests/tokenizer/fixtures/tokenizer.json";
  int threads = 2, tokens = 96, walks = 6;
  double gap_ms = 0;
  app.add_option("--model", model, "artifact (default: the shipped ninfer-tiny)");
  app.add_option("--threads", threads, "CPU backend threads");
  app.add_option("--tokens", tokens, "max output tokens per request");
  app.add_option("--big-tokenizer", big, "a large tokenizer.json for the vocabulary rows (default: the Qwen3.5 test "
                                         "fixture the test build unpacks)");
  app.add_option("--walks", walks, "random constrained outputs on the large vocabulary, per pass");
  app.add_option("--gap-ms", gap_ms, "large vocabulary: idle ms between a token and the next mask, standing in for a "
                                     "model step on an accelerator (the mask workers use it); default 0");
  CLI11_PARSE(app, argc, argv);
  try {
    Artifact a = Artifact::open(model);
    ModelConfig c = load_model_config(a);
    Tokenizer tok = Tokenizer::from_json(std::string(*a.blob("tokenizer.json")));
    const int32_t end = tok.require_token_id("<|im_end|>");
    EngineOptions o{.max_context = 1024, .prefill_chunk = 512, .max_concurrency = 1, .kv_dtype = DType::kF32,
                    .threads = threads, .greedy = true};
    Engine engine(a, c, o);
    std::vector<std::vector<int32_t>> prompts;
    for (const char* p : {"Describe a person as JSON.", "Give me a record with name, age and tags.", "JSON please:"})
      prompts.push_back(tok.encode(p));
    const auto schema = ojson::parse(kSchema);
    const constrain::Grammar schema_grammar = constrain::JsonGrammar::from_schema(schema);
    const constrain::Grammar object_grammar = constrain::JsonGrammar::any_object();
    auto tiny_vocab = constrain::TokenVocabulary::from_tokenizer(tok);
    engine_row(engine, "warm-up", prompts, 8, nullptr, end);
    std::vector<Row> rows;
    rows.push_back(engine_row(engine, "ninfer-tiny, plain", prompts, tokens, nullptr, end));
    cold_and_warm(rows, "ninfer-tiny, json_schema", schema_grammar, tiny_vocab,
                  [&](const std::string& l, const auto& g, double waited) {
                    return engine_row(engine, l, prompts, tokens, g, end, waited);
                  });
    const double step_ms = rows[0].step_ms;

    std::fprintf(stderr, "sorting the large vocabulary (%s)\n", big.c_str());
    Tokenizer big_tok = Tokenizer::from_json(std::ifstream(big) ? [&] {
      std::ifstream f(big, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(f), {});
    }() : throw Error(ErrorKind::kNotFound, "--big-tokenizer " + big + " not found (build the tests first)"));
    const auto t0 = Clock::now();
    auto big_vocab = constrain::TokenVocabulary::from_tokenizer(big_tok);
    const double sort_ms = 1e3 * std::chrono::duration<double>(Clock::now() - t0).count();
    const int32_t big_end = big_tok.require_token_id("<|im_end|>");
    const size_t width = 248320;  // the Qwen3.5 checkpoints' padded vocab_size
    cold_and_warm(rows, "248k vocab, json_schema", schema_grammar, big_vocab,
                  [&](const std::string& l, const auto& g, double waited) {
                    return walk_row(l, g, big_end, walks, tokens, width, 1, gap_ms, waited);
                  });
    cold_and_warm(rows, "248k vocab, json_object", object_grammar, big_vocab,
                  [&](const std::string& l, const auto& g, double waited) {
                    return walk_row(l, g, big_end, walks, tokens, width, 2, gap_ms, waited);
                  });

    fmt::print("model {} (vocab {}), {} threads, {} prompts × ≤ {} tokens; large vocabulary {} tokens ({} eligible, "
               "sorted in {:.0f} ms), logits rows of {}, {} ms idle between its tokens\n\n",
               a.path(), c.vocab_size, threads, prompts.size(), tokens, big_vocab->size(), big_vocab->sorted().size(),
               sort_ms, width, gap_ms);
    fmt::print("| case | first token / mask ms | first output ms | worker precompute ms | output tokens | "
               "vocabulary walks in steps | waits for the worker's walk | state-cache misses | decode step ms | "
               "grammar µs / token | grammar / plain step |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    const auto ms = [](double v) { return v >= 0 ? fmt::format("{:.0f}", v) : std::string("–"); };
    for (const Row& r : rows)
      fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1f} | {:.1f}% |\n", r.label, ms(r.first_ms),
                 ms(r.first_output_ms), ms(r.worker_ms), r.tokens, r.walks, r.waits, r.misses,
                 r.step_ms > 0 ? fmt::format("{:.2f}", r.step_ms) : "–", r.mask_us,
                 step_ms > 0 ? 100.0 * r.mask_us / (1e3 * step_ms) : 0.0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ninfer-bench-constrain: %s\n", e.what());
    return 1;
  }
  return 0;
}
