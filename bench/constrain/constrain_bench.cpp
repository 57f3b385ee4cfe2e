// ninfer-bench-constrain: what structured output costs. For a new schema, the wait until its first token (ninfer-tiny,
// in the engine) or first mask (a 248k-token vocabulary, the Qwen3.5 tokenizer, along random constrained outputs);
// and the grammar's mask time per output token against ninfer-tiny's plain decode step. Cold (a schema's first
// outputs) three ways: every vocabulary walk in the step (no worker); the request waiting until the worker has
// precomputed the whole grammar (the behaviour before the hybrid); the hybrid (the request starts at once, the step
// walks what the worker has not yet). Warm: the same outputs again (cached masks). The batch rows: what a new schema's
// request costs a plain request already running beside it (its ms per token), with the schema's request walking in the
// step (before) or passed over until its mask is walked (after); and the schema's request alone both ways.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iterator>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <numeric>
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
// Returns the fully precomputed grammar (for the batch rows' warm case).
std::shared_ptr<constrain::CompiledGrammar> cold_and_warm(std::vector<Row>& rows, const std::string& label,
                                                          const constrain::Grammar& g,
                                                          const std::shared_ptr<const constrain::TokenVocabulary>& vocab,
                                                          const RunRow& run) {
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
  return pre;
}

// The batch: what a new schema's request costs the requests already running beside it. A plain request runs alone
// for a while; then a request of the schema arrives (its grammar new, queued on the mask workers, or warm) and the
// plain request's time per token is taken over that request's life, against its own before.
struct BatchRow {
  std::string label;
  double alone_ms = -1;     // the plain request's ms per token before the schema's request arrived (-1: no plain one)
  double during_ms = -1;    // ... while it ran (mean)
  double during_p90_ms = -1, during_max_ms = -1;
  size_t during_tokens = 0;  // the plain request's tokens while it ran
  double first_ms = 0, output_ms = 0;  // the schema's request: first token and whole output, from its arrival
  int64_t tokens = 0;
  int64_t passed_over = 0;  // steps it was passed over (EngineStats::passed_over)
  size_t walks = 0;         // vocabulary walks in the engine's steps
};

// Keeps the time of every output token.
class TokenClock final : public RequestObserver {
 public:
  void on_tokens(std::span<const OutputToken> t) override {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < t.size(); ++i) times_.push_back(Clock::now());
    cv_.notify_all();
  }
  void on_finish(const RequestResult& r) override {
    std::lock_guard lock(mu_);
    result_ = r, done_ = true;
    cv_.notify_all();
  }
  void wait_tokens(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_ || times_.size() >= n; });
  }
  std::pair<std::vector<Clock::time_point>, RequestResult> wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    return {times_, result_};
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Clock::time_point> times_;
  RequestResult result_;
  bool done_ = false;
};

// A constraint as the engine sees it, its ready() hidden or not: hidden, the engine cannot pass over the request and
// every walk its worker has not done falls in the batch's step (the behaviour before requests waited for their mask).
class Gate final : public LogitConstraint {
 public:
  Gate(std::shared_ptr<LogitConstraint> inner, bool waits) : inner_(std::move(inner)), waits_(waits) {}
  // start() is not forwarded, as TimedConstraint does not: no output limit, so no keep-in-time check near it (at 248k
  // tokens that check costs more than the walks: every allowed token advanced through the matcher).
  bool ready() override { return !waits_ || inner_->ready(); }
  void mask(std::span<float> logits) override { inner_->mask(logits); }
  void accept(int32_t id) override { inner_->accept(id); }

 private:
  std::shared_ptr<LogitConstraint> inner_;
  bool waits_;
};

// `grammar` over any vocabulary: one larger than the model's masks its first ids (the walks cost what they cost over
// that vocabulary; the output follows the grammar through those ids). `end_id` is the model's.
// An empty `plain_prompt`: the schema's request alone in the engine.
BatchRow batch_row(Engine& engine, const std::string& label, const std::vector<int32_t>& plain_prompt,
                   const std::vector<int32_t>& prompt, int tokens,
                   const std::shared_ptr<constrain::CompiledGrammar>& grammar, bool waits, int32_t end_id) {
  constexpr size_t kAlone = 24;  // plain tokens before the schema's request arrives
  BatchRow row{label};
  auto plain = std::make_shared<TokenClock>();
  SubmitOutcome po;
  if (!plain_prompt.empty()) {
    EngineRequest p;
    p.prompt = plain_prompt;
    p.sampling.greedy = true;
    p.max_tokens = static_cast<int64_t>(engine.options().max_context) - static_cast<int64_t>(plain_prompt.size());
    po = engine.submit(p, plain);
    if (!po.accepted()) throw std::runtime_error(label + ": " + po.message);
    plain->wait_tokens(kAlone);
  }
  const size_t walks0 = grammar->masks().runtime_walks();
  const int64_t passed0 = engine.stats().passed_over;
  EngineRequest r;
  r.prompt = prompt;
  r.sampling.greedy = true;
  r.max_tokens = tokens;
  r.stop_ids = {end_id};
  r.constraint = std::make_shared<Gate>(
      std::make_shared<constrain::GrammarConstraint>(grammar, constrain::GrammarConstraintOptions{{end_id}, {}}), waits);
  auto schema = std::make_shared<TokenClock>();
  const auto arrived = Clock::now();
  if (!engine.submit(r, schema).accepted()) throw std::runtime_error(label + ": refused");
  const auto [stimes, sresult] = schema->wait();
  const auto ended = Clock::now();
  if (sresult.reason == FinishReason::kError) throw std::runtime_error(label + ": " + sresult.error);
  const auto ms = [](Clock::time_point a, Clock::time_point b) {
    return 1e3 * std::chrono::duration<double>(b - a).count();
  };
  row.tokens = sresult.completion_tokens;
  if (!stimes.empty()) row.first_ms = ms(arrived, stimes.front()), row.output_ms = ms(arrived, stimes.back());
  row.passed_over = engine.stats().passed_over - passed0;
  row.walks = grammar->masks().runtime_walks() - walks0;
  if (plain_prompt.empty()) return row;
  engine.cancel(po.id);
  const auto [ptimes, presult] = plain->wait();
  if (ptimes.size() < kAlone + 2 || presult.reason != FinishReason::kCancelled)
    throw std::runtime_error(label + ": the plain request ended before the schema's (raise max_context)");
  row.alone_ms = ms(ptimes[1], ptimes[kAlone - 1]) / static_cast<double>(kAlone - 2);
  std::vector<double> during;
  for (size_t i = 1; i < ptimes.size(); ++i)
    if (ptimes[i] > arrived && ptimes[i] <= ended) during.push_back(ms(ptimes[i - 1], ptimes[i]));
  if (!during.empty()) {
    row.during_tokens = during.size();
    row.during_ms = 0;
    for (double d : during) row.during_ms += d / static_cast<double>(during.size());
    std::sort(during.begin(), during.end());
    row.during_p90_ms = during[during.size() * 9 / 10];
    row.during_max_ms = during.back();
  }
  return row;
}

// The schema's request warm (`pre`, precomputed), then cold with its ready() hidden (before) and cold passed over
// while its masks are walked (after).
void batch_rows(std::vector<BatchRow>& rows, Engine& engine, const std::string& label, const constrain::Grammar& g,
                const std::shared_ptr<const constrain::TokenVocabulary>& vocab,
                const std::shared_ptr<constrain::CompiledGrammar>& pre, const std::vector<int32_t>& plain_prompt,
                const std::vector<int32_t>& prompt, int tokens, int32_t end_id) {
  rows.push_back(batch_row(engine, label + ", warm", plain_prompt, prompt, tokens, pre, true, end_id));
  rows.push_back(batch_row(engine, label + ", cold, walks in the step (before)", plain_prompt, prompt, tokens,
                           grammar_of(g, vocab, true), false, end_id));
  rows.push_back(batch_row(engine, label + ", cold, passed over until its mask is walked (after)", plain_prompt,
                           prompt, tokens, grammar_of(g, vocab, true), true, end_id));
  // Alone: nothing else could run, so nothing is passed over; the step walks what the worker has not, as before.
  rows.push_back(batch_row(engine, label + ", cold, alone, before", {}, prompt, tokens, grammar_of(g, vocab, true),
                           false, end_id));
  rows.push_back(batch_row(engine, label + ", cold, alone, after", {}, prompt, tokens, grammar_of(g, vocab, true), true,
                           end_id));
}

// What `maxLength` costs: a string of at most N characters is a chain of N counted rules (Repeat, grammar.h) whose
// masks are derived from one counted walk per key (token_masks.h); before issue 20 each count's masks were walked apart.
// The whole precomputation (GrammarMasks::precompute, this thread) of an object with one string property, unbounded and
// with maxLength N (up to the schema limit, 256) or minLength, and of the benchmark's schema with and without its
// maxLength keywords.
void maxlength_sweep(const std::string& vocab_label, const constrain::TokenVocabulary& vocab) {
  const auto one = [](const std::string& bound) {
    return R"({"type":"object","properties":{"name":{"type":"string")" + bound + R"(}},"required":["name"]})";
  };
  std::string unbounded = kSchema;
  for (const char* k : {R"(,"maxLength":24)", R"(,"maxLength":12)"}) unbounded.erase(unbounded.find(k), std::strlen(k));
  const std::pair<std::string, std::string> cases[] = {
      {"one string, unbounded", one("")},
      {"one string, maxLength 4", one(R"(,"maxLength":4)")},
      {"one string, maxLength 12", one(R"(,"maxLength":12)")},
      {"one string, maxLength 24", one(R"(,"maxLength":24)")},
      {"one string, maxLength 48", one(R"(,"maxLength":48)")},
      {"one string, maxLength 256", one(R"(,"maxLength":256)")},
      {"one string, minLength 8, maxLength 24", one(R"(,"minLength":8,"maxLength":24)")},
      {"one string, minLength 24", one(R"(,"minLength":24)")},
      {"the benchmark's schema", kSchema},
      {"the benchmark's schema without maxLength", unbounded},
  };
  for (const auto& [label, schema] : cases) {
    const constrain::Grammar g = constrain::JsonGrammar::from_schema(ojson::parse(schema));
    constrain::GrammarMasks masks(g, vocab);
    const auto t0 = Clock::now();
    const constrain::PrecomputeStats st = masks.precompute();
    fmt::print("| {} | {} | {} | {} | {:.0f} |\n", vocab_label, label, st.walks, st.positions,
               1e3 * std::chrono::duration<double>(Clock::now() - t0).count());
  }
}

// What ending in time costs (GrammarConstraint::keep_in_time): random constrained outputs over the 248k vocabulary
// with an output limit of `limit` tokens given to the constraint (start()), the grammar precomputed so that no walk
// is timed; the mask time of each token, split into the tokens inside the completion window (where the check runs:
// every allowed token's shortest completion) and the others. The same outputs' rows without a limit are the
// baseline.
void keep_in_time_rows(const std::string& label, const std::shared_ptr<constrain::CompiledGrammar>& g, int32_t end_id,
                       int outputs, int limit, size_t width) {
  for (bool limited : {false, true}) {
    std::mt19937 rng(7);
    std::vector<float> logits(width);
    std::vector<double> us;
    int64_t ended = 0;
    for (int o = 0; o < outputs; ++o) {
      constrain::GrammarConstraint c(g, {{end_id}, {}});
      if (limited) c.start(limit);
      for (int t = 0; t < limit; ++t) {
        std::fill(logits.begin(), logits.end(), 0.0f);
        const auto t0 = Clock::now();
        c.mask(logits);
        us.push_back(1e6 * std::chrono::duration<double>(Clock::now() - t0).count());
        std::vector<int32_t> ids;
        for (size_t id = 0; id < logits.size(); ++id)
          if (logits[id] == 0.0f) ids.push_back(static_cast<int32_t>(id));
        const int32_t pick = ids[rng() % ids.size()];  // uniform: long tokens too, the check's worst case
        c.accept(pick);
        if (pick == end_id) {
          ++ended;
          break;
        }
      }
    }
    std::vector<double> sorted = us;
    std::sort(sorted.begin(), sorted.end());
    const double mean = std::accumulate(us.begin(), us.end(), 0.0) / static_cast<double>(us.size());
    fmt::print("| {} | {} | {} | {}/{} | {:.0f} | {:.0f} | {:.0f} |\n", label, limited ? std::to_string(limit) : "none",
               us.size(), ended, outputs, mean, sorted[sorted.size() * 9 / 10], sorted.back());
  }
}

}  // namespace
}  // namespace ninfer

int main(int argc, char** argv) {
  using namespace ninfer;
  CLI::App app{"ninfer-bench-constrain: structured output's mask time per token, against the decode step"};
  std::string model = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";
  std::string big = std::string(NINFER_BINARY_DIR) + "/tests/tokenizer/fixtures/tokenizer.json";
  int threads = 2, tokens = 96, walks = 6, batch_tokens = 96;
  double gap_ms = 0;
  app.add_option("--model", model, "artifact (default: the shipped ninfer-tiny)");
  app.add_option("--threads", threads, "CPU backend threads");
  app.add_option("--tokens", tokens, "max output tokens per request");
  app.add_option("--big-tokenizer", big, "a large tokenizer.json for the vocabulary rows (default: the Qwen3.5 test "
                                         "fixture the test build unpacks)");
  app.add_option("--walks", walks, "random constrained outputs on the large vocabulary, per pass");
  app.add_option("--gap-ms", gap_ms, "large vocabulary: idle ms between a token and the next mask, standing in for a "
                                     "model step on an accelerator (the mask workers use it); default 0");
  bool sweep = false;
  app.add_flag("--maxlength-sweep", sweep, "only the whole precomputation of strings of maxLength 4..256 and of the "
                                           "schema with and without maxLength, on both vocabularies (about a minute)");
  int keep_limit = 0;
  app.add_option("--keep-in-time", keep_limit, "only the cost of ending in time: random outputs over the 248k "
                                               "vocabulary with this output limit, against no limit");
  app.add_option("--batch-tokens", batch_tokens, "the batch rows' schema request: max output tokens (0: no batch "
                                                 "rows)");
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
    std::fprintf(stderr, "sorting the large vocabulary (%s)\n", big.c_str());
    Tokenizer big_tok = Tokenizer::from_json(std::ifstream(big) ? [&] {
      std::ifstream f(big, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(f), {});
    }() : throw Error(ErrorKind::kNotFound, "--big-tokenizer " + big + " not found (build the tests first)"));
    const auto t0 = Clock::now();
    auto big_vocab = constrain::TokenVocabulary::from_tokenizer(big_tok);
    const double sort_ms = 1e3 * std::chrono::duration<double>(Clock::now() - t0).count();
    if (sweep) {
      fmt::print("| vocabulary | schema | walks | positions | precompute ms |\n|---|---|---|---|---|\n");
      maxlength_sweep(fmt::format("ninfer-tiny's ({})", tiny_vocab->sorted().size()), *tiny_vocab);
      maxlength_sweep(fmt::format("248k ({})", big_vocab->sorted().size()), *big_vocab);
      return 0;
    }
    if (keep_limit > 0) {
      const int32_t big_end = big_tok.require_token_id("<|im_end|>");
      fmt::print("| grammar (248k vocabulary, precomputed) | output limit | masks | outputs ended | mean µs | p90 µs | "
                 "max µs |\n|---|---|---|---|---|---|---|\n");
      for (const auto& [label, grammar] : {std::pair{"json_schema", &schema_grammar}, std::pair{"json_object", &object_grammar}}) {
        auto [pre, waited] = prepare(*grammar, big_vocab, Cold::kWaitForWorker);
        keep_in_time_rows(label, pre, big_end, walks, keep_limit, 248320);
      }
      return 0;
    }
    engine_row(engine, "warm-up", prompts, 8, nullptr, end);
    std::vector<Row> rows;
    rows.push_back(engine_row(engine, "ninfer-tiny, plain", prompts, tokens, nullptr, end));
    const auto tiny_pre = cold_and_warm(rows, "ninfer-tiny, json_schema", schema_grammar, tiny_vocab,
                  [&](const std::string& l, const auto& g, double waited) {
                    return engine_row(engine, l, prompts, tokens, g, end, waited);
                  });
    const double step_ms = rows[0].step_ms;

    const int32_t big_end = big_tok.require_token_id("<|im_end|>");
    const size_t width = 248320;  // the Qwen3.5 checkpoints' padded vocab_size
    const auto big_pre = cold_and_warm(rows, "248k vocab, json_schema", schema_grammar, big_vocab,
                  [&](const std::string& l, const auto& g, double waited) {
                    return walk_row(l, g, big_end, walks, tokens, width, 1, gap_ms, waited);
                  });
    cold_and_warm(rows, "248k vocab, json_object", object_grammar, big_vocab,
                  [&](const std::string& l, const auto& g, double waited) {
                    return walk_row(l, g, big_end, walks, tokens, width, 2, gap_ms, waited);
                  });

    std::vector<BatchRow> batch;
    if (batch_tokens > 0) {
      EngineOptions bo = o;
      bo.max_concurrency = 2, bo.max_context = 4096;
      Engine batch_engine(a, c, bo);
      const std::vector<int32_t> plain_prompt = tok.encode("Tell me a long story about the sea.");
      batch_rows(batch, batch_engine, "ninfer-tiny's vocabulary", schema_grammar, tiny_vocab, tiny_pre, plain_prompt,
                 prompts[0], batch_tokens, end);
      batch_rows(batch, batch_engine, "248k vocabulary on ninfer-tiny's ids", schema_grammar, big_vocab, big_pre,
                 plain_prompt, prompts[0], batch_tokens, end);
    }

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
    if (!batch.empty()) {
      fmt::print("\nThe batch: a plain request running, then a request of the schema arriving beside it "
                 "(max_concurrency 2, ≤ {} tokens, greedy, no output limit given to the grammar); the plain request's "
                 "ms per token alone and while the schema's request ran; the 248k rows mask ninfer-tiny's {} ids with "
                 "the 248k vocabulary's masks (its walks' real cost)\n\n",
                 batch_tokens, c.vocab_size);
      fmt::print("| case | plain request alone ms / token | beside the schema's request: mean | p90 | max | its "
                 "tokens then | schema request's first token ms | its whole output ms | its tokens | steps passed "
                 "over | vocabulary walks in steps |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
      const auto ms2 = [](double v) { return v >= 0 ? fmt::format("{:.2f}", v) : std::string("–"); };
      for (const BatchRow& r : batch)
        fmt::print("| {} | {} | {} | {} | {} | {} | {:.0f} | {:.0f} | {} | {} | {} |\n", r.label, ms2(r.alone_ms),
                   ms2(r.during_ms), ms2(r.during_p90_ms), ms2(r.during_max_ms),
                   r.alone_ms >= 0 ? std::to_string(r.during_tokens) : "–", r.first_ms, r.output_ms, r.tokens,
                   r.passed_over, r.walks);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ninfer-bench-constrain: %s\n", e.what());
    return 1;
  }
  return 0;
}
