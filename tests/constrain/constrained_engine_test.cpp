// Constrained decoding in the engine on ninfer-tiny: every output is a sentence of its schema (and JSON), greedy
// outputs with a drafter (random, oracle) equal those without, sampled outputs are sentences too, and a constraint
// that fails ends its request alone.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "engine/constrain/grammar_constraint.h"
#include "engine/constrain/json_grammar.h"
#include "engine/constrain/tool_call_grammar.h"
#include "engine/constrain/triggered_constraint.h"
#include "engine/core/error.h"
#include "tests/spec/spec_test_util.h"
#include "tests/spec/test_drafters.h"

namespace ninfer::testing {
namespace {

using constrain::CompiledGrammar;
using constrain::GrammarConstraint;
using constrain::JsonGrammar;
using ojson = nlohmann::ordered_json;

const char* kSchemas[] = {
    R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer"},"ok":{"type":"boolean"}},"required":["name","age","ok"]})",
    R"({"type":"array","items":{"enum":["red","green","blue"]},"minItems":1,"maxItems":4})",
    R"({"type":"object","properties":{"kind":{"const":"point"},"xy":{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":2}},"required":["kind","xy"]})",
};

struct Constrained : ::testing::Test {
  static void SetUpTestSuite() {
    model = std::make_unique<ReferenceModel>(ReferenceModel::Packed{kTinyArtifact});
    tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_json(*model->artifact->blob("tokenizer.json")));
    vocab = constrain::TokenVocabulary::from_tokenizer(*tokenizer);
  }
  static void TearDownTestSuite() { model.reset(), tokenizer.reset(), vocab.reset(); }
  static std::unique_ptr<ReferenceModel> model;
  static std::unique_ptr<Tokenizer> tokenizer;
  static std::shared_ptr<const constrain::TokenVocabulary> vocab;

  int32_t end_id() const { return tokenizer->require_token_id("<|im_end|>"); }

  // Fresh requests (a constraint follows one request) over shared compiled grammars.
  std::vector<EngineRequest> requests(const std::vector<std::shared_ptr<CompiledGrammar>>& grammars, bool greedy) const {
    std::vector<EngineRequest> reqs;
    const auto V = static_cast<int32_t>(model->config.vocab_size);
    for (size_t i = 0; i < grammars.size(); ++i) {
      EngineRequest r;
      r.prompt = random_prompt(7 + 5 * i, V, 10 + i);
      r.sampling.greedy = greedy;
      r.sampling.seed = 1000 + i;
      r.max_tokens = 160;
      r.stop_ids = {end_id()};
      r.constraint = std::make_shared<GrammarConstraint>(grammars[i], constrain::GrammarConstraintOptions{{end_id()}, {}});
      reqs.push_back(std::move(r));
    }
    return reqs;
  }

  std::vector<std::shared_ptr<CompiledGrammar>> grammars() const {
    std::vector<std::shared_ptr<CompiledGrammar>> out;
    for (const char* s : kSchemas)
      out.push_back(std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(ojson::parse(s)), vocab));
    return out;
  }

  // Greedy outputs over fully precomputed grammars (`pre`, made here): what a run over other grammars must equal.
  EngineRun precomputed_run(const EngineOptions& o, std::vector<std::shared_ptr<CompiledGrammar>>& pre) const {
    pre = grammars();
    for (auto& g : pre) g->masks().precompute();
    return run_engine(*model, o, requests(pre, true));
  }

  // Greedy outputs over fresh grammars (`gs`, made here) queued on `workers` as the requests are submitted.
  EngineRun queued_run(const EngineOptions& o, constrain::MaskWorkers& workers,
                       std::vector<std::shared_ptr<CompiledGrammar>>& gs) const {
    gs = grammars();
    for (auto& g : gs) g->precompute_async("test", workers);
    return run_engine(*model, o, requests(gs, true));
  }

  // A plain request (no constraint, no stop token): it runs to max_tokens, a batch companion that keeps stepping.
  EngineRequest plain_request(int64_t max_tokens) const {
    EngineRequest r;
    r.prompt = random_prompt(9, static_cast<int32_t>(model->config.vocab_size), 99);
    r.sampling.greedy = true;
    r.max_tokens = max_tokens;
    return r;
  }

  // Request i of a run alone.
  static EngineRun only(const EngineRun& run, size_t i) {
    EngineRun one;
    one.tokens = {run.tokens[i]};
    one.results = {run.results[i]};
    return one;
  }

  void expect_sentences(const EngineRun& run, const std::vector<std::shared_ptr<CompiledGrammar>>& gs) const {
    for (size_t i = 0; i < run.tokens.size(); ++i) {
      ASSERT_EQ(run.results[i].reason, FinishReason::kEos) << "request " << i << ": " << run.results[i].error;
      std::vector<int32_t> ids = run.tokens[i];
      ASSERT_EQ(ids.back(), end_id());
      ids.pop_back();
      const std::string text = tokenizer->decode(ids);
      EXPECT_TRUE(nlohmann::json::accept(text)) << "not JSON: " << text;
      EXPECT_TRUE(constrain::GrammarMatcher(gs[i]->grammar()).matches(text)) << text;
    }
  }
};
std::unique_ptr<ReferenceModel> Constrained::model;
std::unique_ptr<Tokenizer> Constrained::tokenizer;
std::shared_ptr<const constrain::TokenVocabulary> Constrained::vocab;

TEST_F(Constrained, GreedyOutputsAreSentencesAndDraftersChangeNothing) {
  const auto gs = grammars();
  const EngineOptions o{.max_context = 256, .prefill_chunk = 64, .max_concurrency = 3, .threads = 2};
  const EngineRun plain = run_engine(*model, o, requests(gs, true));
  expect_sentences(plain, gs);
  std::vector<std::vector<int32_t>> truth;
  const auto reqs = requests(gs, true);
  for (size_t i = 0; i < reqs.size(); ++i) {
    truth.push_back(reqs[i].prompt);
    truth.back().insert(truth.back().end(), plain.tokens[i].begin(), plain.tokens[i].end());
  }
  for (int32_t k : {1, 3}) {
    for (bool oracle : {false, true}) {
      EngineOptions so = o;
      std::shared_ptr<ContractDrafter> d;
      std::unique_ptr<ContractDrafter> owned;
      const FeatureSpec features{{1}, true};
      if (oracle) owned = std::make_unique<OracleDrafter>(features, model->config.hidden_size, int32_t(model->config.vocab_size), truth, 0);
      else owned = std::make_unique<RandomDrafter>(features, model->config.hidden_size, int32_t(model->config.vocab_size), 5);
      so.drafter = hand_over(owned, d);
      so.draft_tokens = k;
      const EngineRun spec = run_engine(*model, so, requests(gs, true));
      EXPECT_EQ(spec.tokens, plain.tokens) << "K=" << k << (oracle ? " oracle" : " random");
      EXPECT_EQ(d->violation, "");
      if (oracle) {
        EXPECT_EQ(spec.stats.spec.accepted_tokens, spec.stats.spec.drafted_tokens) << "K=" << k;
      }
    }
  }
}

TEST_F(Constrained, SampledOutputsAreSentences) {
  const auto gs = grammars();
  const EngineOptions o{.max_context = 256, .prefill_chunk = 64, .max_concurrency = 3, .threads = 2};
  for (int round = 0; round < 3; ++round) {
    auto reqs = requests(gs, false);
    for (auto& r : reqs) r.sampling.seed = *r.sampling.seed + 17 * round, r.sampling.temperature = 1.0f;
    const EngineRun run = run_engine(*model, o, reqs);
    expect_sentences(run, gs);
  }
}

// Unbounded strings and arrays, a tight max_tokens: the constraint closes the JSON in time, every output ends with the
// end token and parses, whatever the sampler draws.
TEST_F(Constrained, OutputsEndInTimeUnderATightLimit) {
  const auto g = std::make_shared<CompiledGrammar>(
      JsonGrammar::from_schema(ojson::parse(
          R"({"type":"object","properties":{"text":{"type":"string"},"n":{"type":"array","items":{"type":"integer"}}},"required":["text","n"]})")),
      vocab);
  const EngineOptions o{.max_context = 256, .prefill_chunk = 64, .max_concurrency = 3, .threads = 2};
  for (int64_t limit : {20, 24, 40}) {
    auto reqs = requests({g, g, g}, false);
    for (size_t i = 0; i < reqs.size(); ++i) reqs[i].max_tokens = limit, reqs[i].sampling.seed = 77 + i + 3 * limit;
    const EngineRun run = run_engine(*model, o, reqs);
    expect_sentences(run, {g, g, g});
    for (const auto& t : run.tokens) EXPECT_LE(static_cast<int64_t>(t.size()), limit);
  }
}

// Forced tool calls near the limit: random allowed tokens (the worst sampler) still close every call in time, and no
// second parallel call is opened when it could not be finished.
TEST_F(Constrained, ForcedCallsEndInTimeWhateverIsDrawn) {
  const auto tools = ojson::parse(R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
    "properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}}])");
  auto g = std::make_shared<CompiledGrammar>(
      constrain::tool_call_grammar(tools, {constrain::ToolCallSyntax::kXml, "", true}), vocab);
  std::mt19937 rng(5);
  for (int64_t limit : {95, 100, 150, 300}) {
    for (int round = 0; round < 4; ++round) {
      GrammarConstraint c(g, {{end_id()}, {}});
      c.start(limit);
      std::string text;
      bool ended = false;
      std::vector<float> logits(vocab->size());
      for (int64_t n = 0; n < limit && !ended; ++n) {
        std::fill(logits.begin(), logits.end(), 0.0f);
        c.mask(logits);
        std::vector<int32_t> ids;
        for (size_t id = 0; id < logits.size(); ++id)
          if (logits[id] == 0.0f) ids.push_back(static_cast<int32_t>(id));
        ASSERT_FALSE(ids.empty());
        const int32_t pick = ids[rng() % ids.size()];
        c.accept(pick);
        if (pick == end_id()) ended = true;
        else text += vocab->bytes(pick);
      }
      EXPECT_TRUE(ended) << "limit " << limit << ": " << text;
      EXPECT_TRUE(constrain::GrammarMatcher(g->grammar()).matches(text)) << text;
    }
  }
}

// tool_choice "auto" with strict tools (TriggeredConstraint): free text until <tool_call>, then the call grammar.
const char* kWeatherTool = R"([{"type":"function","function":{"name":"get_weather","strict":true,"parameters":{
  "type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}}])";

// The worst sampler (a random allowed token), with the trigger drawn now and then: a call opened anywhere, even near
// the limit, closes and ends in time; the trigger is refused once a call could not be finished; text before the
// trigger is free; and a trigger inside reasoning (before </think>) opens nothing.
TEST_F(Constrained, StrictAutoCallsOpenedAnywhereEndInTime) {
  auto g = std::make_shared<CompiledGrammar>(
      constrain::tool_call_grammar(ojson::parse(kWeatherTool), {constrain::ToolCallSyntax::kXml, "", false}), vocab);
  const int32_t trigger = tokenizer->require_token_id("<tool_call>"), think_end = tokenizer->require_token_id("</think>");
  std::mt19937 rng(9);
  int opened = 0, refused_late = 0;
  const int64_t room = constrain::TriggeredConstraint(g, {trigger, {end_id()}, {}}).room_needed();
  std::printf("a call needs room for %lld tokens\n", static_cast<long long>(room));
  for (int64_t limit : {room / 2, room + 20, room + 80}) {
    for (int round = 0; round < 4; ++round) {
      constrain::TriggeredConstraint c(g, {trigger, {end_id()}, {}});
      c.start(limit);
      std::string after;  // the output from the trigger on
      bool ended = false;
      std::vector<float> logits(vocab->size());
      for (int64_t n = 0; n < limit && !ended; ++n) {
        std::fill(logits.begin(), logits.end(), 0.0f);
        c.mask(logits);
        int32_t pick;
        if (!c.triggered()) {
          if (logits[static_cast<size_t>(trigger)] != 0.0f) ++refused_late;
          const bool open = logits[static_cast<size_t>(trigger)] == 0.0f && rng() % 8 == 0;
          do pick = static_cast<int32_t>(rng() % vocab->size());  // free text: anything but the end and the trigger
          while (!vocab->eligible(pick) || pick == trigger);
          if (open) pick = trigger, ++opened;
        } else {
          std::vector<int32_t> ids;
          for (size_t id = 0; id < logits.size(); ++id)
            if (logits[id] == 0.0f) ids.push_back(static_cast<int32_t>(id));
          ASSERT_FALSE(ids.empty());
          pick = ids[rng() % ids.size()];
        }
        c.accept(pick);
        if (c.triggered() && pick == end_id()) ended = true;
        else if (c.triggered()) after += vocab->bytes(pick);
      }
      if (c.triggered()) {
        EXPECT_TRUE(ended) << "limit " << limit << ": " << after;
        EXPECT_TRUE(constrain::GrammarMatcher(g->grammar()).matches(after)) << after;
      }
    }
  }
  EXPECT_GT(opened, 3);
  EXPECT_GT(refused_late, 0);  // near the limit the trigger was masked
  constrain::TriggeredConstraint reasoning(g, {trigger, {end_id()}, think_end});
  reasoning.accept(trigger);
  EXPECT_FALSE(reasoning.triggered());  // inside reasoning <tool_call> is text
  reasoning.accept(think_end);
  reasoning.accept(trigger);
  EXPECT_TRUE(reasoning.triggered());
}

// In the engine on ninfer-tiny, sampled, with the trigger pushed by logit_bias: whatever the model writes before it,
// every call it opens is a well-formed call of the tool and the output ends after it.
TEST_F(Constrained, StrictAutoCallsInTheEngineAreWellFormed) {
  auto g = std::make_shared<CompiledGrammar>(
      constrain::tool_call_grammar(ojson::parse(kWeatherTool), {constrain::ToolCallSyntax::kXml, "", false}), vocab);
  const int32_t trigger = tokenizer->require_token_id("<tool_call>");
  const EngineOptions o{.max_context = 512, .prefill_chunk = 64, .max_concurrency = 3, .threads = 2};
  std::vector<EngineRequest> reqs;
  for (uint32_t i = 0; i < 6; ++i) {
    EngineRequest r;
    r.prompt = random_prompt(9 + i, static_cast<int32_t>(model->config.vocab_size), 40 + i);
    r.sampling.seed = 70 + i;
    r.sampling.temperature = 1.0f;
    r.sampling.logit_bias = {{trigger, 6.0f + 2.0f * static_cast<float>(i % 3)}};
    r.max_tokens = 480;  // a call needs room for 389 tokens by the byte count (see above)
    r.stop_ids = {end_id()};
    r.constraint = std::make_shared<constrain::TriggeredConstraint>(
        g, constrain::TriggeredConstraintOptions{trigger, {end_id()}, {}});
    reqs.push_back(std::move(r));
  }
  const EngineRun run = run_engine(*model, o, reqs);
  int calls = 0;
  for (size_t i = 0; i < run.tokens.size(); ++i) {
    const std::vector<int32_t>& ids = run.tokens[i];
    const auto at = std::find(ids.begin(), ids.end(), trigger);
    if (at == ids.end()) continue;
    ++calls;
    ASSERT_EQ(ids.back(), end_id()) << "request " << i << ": " << run.results[i].error;
    std::string after;
    for (auto it = at; it + 1 != ids.end(); ++it) after += vocab->bytes(*it);
    EXPECT_TRUE(constrain::GrammarMatcher(g->grammar()).matches(after)) << "request " << i << ": " << after;
  }
  EXPECT_GT(calls, 0);
}

// A constraint that throws ends its own request with an error; the request beside it finishes normally.
struct ThrowingConstraint final : LogitConstraint {
  int calls = 0;
  void mask(std::span<float>) override {
    if (++calls == 3) throw Error(ErrorKind::kInternal, "test constraint gave up");
  }
  void accept(int32_t) override {}
};

TEST_F(Constrained, AFailingConstraintEndsOnlyItsRequest) {
  const auto gs = grammars();
  const EngineOptions o{.max_context = 256, .prefill_chunk = 64, .max_concurrency = 3, .threads = 2};
  auto reqs = requests({gs[0], gs[1]}, true);
  reqs[0].constraint = std::make_shared<ThrowingConstraint>();
  const EngineRun run = run_engine(*model, o, reqs);
  EXPECT_EQ(run.results[0].reason, FinishReason::kError);
  EXPECT_NE(run.results[0].error.find("test constraint gave up"), std::string::npos) << run.results[0].error;
  EXPECT_EQ(run.tokens[0].size(), 2u) << "two tokens went out before the third mask failed";
  EXPECT_EQ(run.results[1].reason, FinishReason::kEos);
  EXPECT_EQ(run.stats.kv_blocks_used, 0);
}

// A request with a brand-new grammar starts at once: with workers that never get to it (a pool of no threads), every
// mask is walked in the step, and the outputs are those of fully precomputed grammars, token for token.
TEST_F(Constrained, ANewGrammarsRequestsRunBeforeAnyPrecomputation) {
  const EngineOptions o{.max_context = 256, .prefill_chunk = 64, .max_concurrency = 3, .threads = 2};
  std::vector<std::shared_ptr<CompiledGrammar>> pre;
  const EngineRun truth = precomputed_run(o, pre);
  expect_sentences(truth, pre);
  constrain::MaskWorkers idle(0);
  std::vector<std::shared_ptr<CompiledGrammar>> fresh;
  const EngineRun run = queued_run(o, idle, fresh);
  EXPECT_EQ(run.tokens, truth.tokens);
  for (size_t i = 0; i < fresh.size(); ++i) {
    EXPECT_TRUE(fresh[i]->precomputing()) << "the idle pool walked something";
    EXPECT_EQ(fresh[i]->precompute_stats().walks, 0u);
    EXPECT_GT(fresh[i]->masks().runtime_walks(), 0u) << kSchemas[i];
    EXPECT_EQ(pre[i]->masks().runtime_walks(), 0u) << "a suffix the precomputation did not enumerate: " << kSchemas[i];
  }
  EXPECT_EQ(idle.pending(), fresh.size());
}

// The hybrid as the server runs it: requests submitted as their grammars are queued on a worker, which walks while
// the engine steps and prefetches each request's next state. Outputs equal fully precomputed grammars' (masks are the
// same whoever walked them), and a walk either side did is not done twice.
TEST_F(Constrained, GrammarsWalkedByTheWorkerAndTheStepGiveTheSameOutputs) {
  const EngineOptions o{.max_context = 256, .prefill_chunk = 64, .max_concurrency = 3, .threads = 2};
  std::vector<std::shared_ptr<CompiledGrammar>> pre;
  const EngineRun truth = precomputed_run(o, pre);
  constrain::MaskWorkers workers(1);
  std::vector<std::shared_ptr<CompiledGrammar>> gs;
  const EngineRun run = queued_run(o, workers, gs);
  EXPECT_EQ(run.tokens, truth.tokens);
  for (int i = 0; i < 5000 && workers.pending() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(workers.pending(), 0u) << "the worker's turns (precomputation and prefetches) did not end in 5 s";
  for (size_t i = 0; i < gs.size(); ++i) {
    ASSERT_TRUE(gs[i]->wait_precomputed(std::chrono::seconds(60)));
    const constrain::PrecomputeStats st = gs[i]->precompute_stats();
    EXPECT_GT(st.walks, 0u) << kSchemas[i];
    EXPECT_GT(st.reach_walks, 0u) << kSchemas[i];
    EXPECT_EQ(st.left_to_runtime, 0u) << kSchemas[i];
    EXPECT_EQ(gs[i]->masks().walks(), st.walks + gs[i]->masks().runtime_walks()) << "a suffix walked twice";
    EXPECT_GT(gs[i]->masks().state_misses(), 0u);
  }
}

// A request whose grammar is still being precomputed is cancelled like any other, and one submitted as the engine
// stops ends too.
TEST_F(Constrained, ARequestWhoseGrammarIsPrecomputingCanBeCancelled) {
  const EngineOptions o{.max_context = 256, .prefill_chunk = 64, .max_concurrency = 2, .threads = 2};
  constrain::MaskWorkers idle(0);
  auto g = grammars()[0];
  g->precompute_async("never walked", idle);
  auto wc = std::make_shared<Collector>();
  {
    Engine engine(*model->artifact, model->config, o);
    const EngineRequest r = requests({g}, true)[0];
    const SubmitOutcome out = engine.submit(r, wc);
    ASSERT_TRUE(out.accepted());
    engine.cancel(out.id);
    wc->wait(std::chrono::seconds(10));
    EXPECT_EQ(wc->result.reason, FinishReason::kCancelled);
    for (int i = 0; i < 1000 && engine.stats().running + engine.stats().waiting != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_EQ(engine.stats().kv_blocks_used, 0);
    auto second = std::make_shared<Collector>();
    ASSERT_TRUE(engine.submit(requests({g}, true)[0], second).accepted());
    wc = second;
  }
  wc->wait(std::chrono::seconds(10));
  EXPECT_TRUE(wc->done);
  EXPECT_TRUE(g->precomputing());
}

// A Collector whose token count can be read while the engine runs.
class CountingCollector : public Collector {
 public:
  void on_tokens(std::span<const OutputToken> t) override {
    count += t.size();
    Collector::on_tokens(t);
  }
  std::atomic<size_t> count{0};
};

// Requests of a new grammar whose mask worker is held (MaskWorkers::hold, a test hook) beside a plain request: they
// are passed over (not one token for them, no vocabulary walk in the batch's steps) while the plain request keeps
// stepping; once the worker goes on, it walks what they wait for and they are scheduled again. Every output is the
// one of a fully precomputed grammar's run, token for token: greedy and seeded sampling (two choices over one grammar,
// as n = 2 makes them), and greedy with a drafter (K = 3: the first verification row waits, the later ones may walk).
TEST_F(Constrained, ARequestWaitingForItsMaskIsPassedOverAndTheBatchGoesOn) {
  for (int32_t k : {0, 3}) {
    EngineOptions o{.max_context = 256, .prefill_chunk = 64, .max_concurrency = 3, .threads = 2};
    std::shared_ptr<ContractDrafter> drafter;  // the last engine's
    const auto with_drafter = [&] {
      EngineOptions so = o;
      if (k == 0) return so;
      std::unique_ptr<ContractDrafter> owned = std::make_unique<RandomDrafter>(
          FeatureSpec{{1}, true}, model->config.hidden_size, int32_t(model->config.vocab_size), 5);
      so.drafter = hand_over(owned, drafter);
      so.draft_tokens = k;
      return so;
    };
    const auto make = [&](const std::shared_ptr<CompiledGrammar>& g) {
      std::vector<EngineRequest> reqs{plain_request(200)};
      for (EngineRequest& r : requests({g, g}, true)) reqs.push_back(std::move(r));
      if (k == 0) reqs[2].sampling.greedy = false, reqs[2].sampling.temperature = 1.0f;  // drafts change samples
      return reqs;
    };
    std::vector<std::shared_ptr<CompiledGrammar>> pre{grammars()[0]};
    pre[0]->masks().precompute();
    const EngineRun truth = run_engine(*model, with_drafter(), make(pre[0]));
    expect_sentences(only(truth, 1), pre);  // the plain request's output is no sentence
    expect_sentences(only(truth, 2), pre);

    constrain::MaskWorkers workers(1);
    workers.hold(true);
    auto g = grammars()[0];
    g->precompute_async("held", workers);
    std::vector<std::shared_ptr<CountingCollector>> cs;
    {
      Engine engine(*model->artifact, model->config, with_drafter());
      for (const EngineRequest& r : make(g)) {
        cs.push_back(std::make_shared<CountingCollector>());
        ASSERT_TRUE(engine.submit(r, cs.back()).accepted());
      }
      cs[0]->wait_tokens(40);
      ASSERT_GE(cs[0]->count.load(), 40u);
      ASSERT_FALSE(cs[0]->done);
      EXPECT_EQ(cs[1]->count.load(), 0u) << "K=" << k;
      EXPECT_EQ(cs[2]->count.load(), 0u) << "K=" << k;
      EXPECT_EQ(g->masks().runtime_walks(), 0u) << "a vocabulary walk in the batch's step";
      EXPECT_GE(engine.stats().passed_over, 2 * 10) << "both are passed over at every step (40 tokens: 10 steps or more)";
      workers.hold(false);
      for (auto& c : cs) c->wait();
      if (drafter) {
        EXPECT_EQ(drafter->violation, "");
      }
    }
    for (size_t i = 0; i < cs.size(); ++i) {
      EXPECT_EQ(cs[i]->result.reason, truth.results[i].reason) << "K=" << k << " request " << i;
      EXPECT_EQ(cs[i]->tokens, truth.tokens[i]) << "K=" << k << " request " << i;
    }
  }
}

// With nothing else to run, a request whose mask is not walked does not wait for the worker: the step walks it, as
// before (a request alone is not slowed down). Here the worker never runs: the new grammar's request is passed over
// while a short plain request runs, then walks its masks in its own steps, and its output is unchanged.
TEST_F(Constrained, ARequestWaitingForItsMaskRunsWhenNothingElseCan) {
  const EngineOptions o{.max_context = 256, .prefill_chunk = 64, .max_concurrency = 3, .threads = 2};
  std::vector<std::shared_ptr<CompiledGrammar>> pre{grammars()[0]};
  pre[0]->masks().precompute();
  const EngineRun truth = run_engine(*model, o, {plain_request(12), requests(pre, true)[0]});
  constrain::MaskWorkers workers(1);
  workers.hold(true);
  std::vector<std::shared_ptr<CompiledGrammar>> gs{grammars()[0]};
  gs[0]->precompute_async("held throughout", workers);
  const EngineRun run = run_engine(*model, o, {plain_request(12), requests(gs, true)[0]});
  EXPECT_EQ(run.tokens, truth.tokens);
  expect_sentences(only(run, 1), gs);
  EXPECT_GT(run.stats.passed_over, 0);
  EXPECT_EQ(truth.stats.passed_over, 0);
  EXPECT_GT(gs[0]->masks().runtime_walks(), 0u);
  EXPECT_EQ(gs[0]->precompute_stats().walks, 0u) << "the held worker walked";
  EXPECT_GE(run.results[1].timings.ttft_s, run.results[0].timings.total_s * 0.9)
      << "its first token came before the plain request ended";
}

// A request passed over while it waits for its mask is cancelled like any other; the batch goes on.
TEST_F(Constrained, ARequestWaitingForItsMaskCanBeCancelled) {
  const EngineOptions o{.max_context = 256, .prefill_chunk = 64, .max_concurrency = 2, .threads = 2};
  const EngineRun alone = run_engine(*model, o, {plain_request(120)});
  constrain::MaskWorkers workers(1);
  workers.hold(true);
  auto g = grammars()[0];
  g->precompute_async("held", workers);
  auto plain = std::make_shared<CountingCollector>();
  auto waiting = std::make_shared<CountingCollector>();
  Engine engine(*model->artifact, model->config, o);
  ASSERT_TRUE(engine.submit(plain_request(120), plain).accepted());
  const SubmitOutcome w = engine.submit(requests({g}, true)[0], waiting);
  ASSERT_TRUE(w.accepted());
  plain->wait_tokens(10);
  engine.cancel(w.id);
  waiting->wait(std::chrono::seconds(10));
  EXPECT_EQ(waiting->result.reason, FinishReason::kCancelled);
  EXPECT_EQ(waiting->count.load(), 0u);
  EXPECT_FALSE(plain->done) << "the plain request should still be running";
  plain->wait();
  EXPECT_EQ(plain->result.reason, FinishReason::kOutputLimit);
  EXPECT_EQ(plain->tokens, alone.tokens[0]);
  EXPECT_EQ(g->masks().runtime_walks(), 0u);
  for (int i = 0; i < 1000 && engine.stats().running + engine.stats().waiting != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
}

}  // namespace
}  // namespace ninfer::testing
