// The engine over a model whose vocab_size exceeds the tokenizer's ids (padded embedding rows): masked ids are never
// produced (greedy, sampled, speculative) nor listed in logprobs; an observer that throws ends only its request.
#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/model/model_artifact.h"
#include "engine/runtime/engine.h"
#include "server/engine_service.h"
#include "tests/spec/test_drafters.h"
#include "tests/support/request_collector.h"

namespace ninfer::testing {
namespace {

const std::string kTiny = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";
constexpr int32_t kValid = 4096;  // the "tokenizer" of these tests has the ids below this

struct Tiny {
  Artifact artifact = Artifact::open(kTiny);
  ModelConfig config = load_model_config(artifact);
};

EngineOptions options(std::vector<uint8_t> output_ids = {}) {
  EngineOptions o{.max_context = 256, .prefill_chunk = 64, .max_concurrency = 4, .threads = 2};
  o.output_ids = std::move(output_ids);
  return o;
}

EngineRequest request(bool greedy, int64_t max_tokens, uint64_t seed = 7) {
  EngineRequest r;
  r.prompt = {523, 1024, 901, 2000, 3001, 777, 1500, 2500};
  r.max_tokens = max_tokens;
  r.sampling.greedy = greedy;
  r.sampling.temperature = 1.5f;
  r.sampling.seed = seed;
  r.sampling.logprobs = true;
  r.sampling.top_logprobs = 20;
  return r;
}

struct Output {
  std::vector<OutputToken> tokens;
  RequestResult result;
};

class Keeper : public Collector {
 public:
  void on_tokens(std::span<const OutputToken> t) override {
    all.insert(all.end(), t.begin(), t.end());
    Collector::on_tokens(t);
  }
  std::vector<OutputToken> all;
};

Output run(Engine& engine, const EngineRequest& r) {
  auto c = std::make_shared<Keeper>();
  SubmitOutcome out = engine.submit(r, c);
  EXPECT_TRUE(out.accepted()) << out.message;
  if (!out.accepted()) return {};
  c->wait();
  return {c->all, c->result};
}

// Ids >= kValid are padded rows; `extra` are masked too.
std::vector<uint8_t> allowed(int64_t vocab, const std::set<int32_t>& extra = {}) {
  std::vector<uint8_t> ids(static_cast<size_t>(vocab), 0);
  for (int32_t id = 0; id < kValid; ++id) ids[static_cast<size_t>(id)] = extra.count(id) ? 0 : 1;
  return ids;
}

void expect_only_allowed(const Output& r, const std::vector<uint8_t>& ok) {
  ASSERT_FALSE(r.tokens.empty());
  for (const OutputToken& t : r.tokens) {
    EXPECT_TRUE(ok[static_cast<size_t>(t.token.id)]) << "produced masked id " << t.token.id;
    EXPECT_TRUE(std::isfinite(t.token.logprob)) << t.token.id;
    for (const auto& [id, lp] : t.token.top) {
      EXPECT_TRUE(ok[static_cast<size_t>(id)]) << "logprobs list masked id " << id;
      EXPECT_TRUE(std::isfinite(lp));
    }
  }
}

TEST(PaddedVocab, MaskedIdsAreNeverProducedGreedyOrSampled) {
  Tiny m;
  ASSERT_GT(m.config.vocab_size, kValid);
  std::vector<int32_t> greedy_ids;
  {
    Engine plain(m.artifact, m.config, options());
    for (const OutputToken& t : run(plain, request(true, 24)).tokens) greedy_ids.push_back(t.token.id);
    // Without the mask, sampling does reach the padded rows: the masked run below is not vacuous.
    int64_t padded = 0;
    for (uint64_t seed = 1; seed <= 4; ++seed)
      for (const OutputToken& t : run(plain, request(false, 48, seed)).tokens) padded += t.token.id >= kValid;
    ASSERT_GT(padded, 0) << "sampling never reached an id >= " << kValid << ": pick a smaller kValid";
  }
  ASSERT_FALSE(greedy_ids.empty());
  // Mask the ids greedy decoding chose, too: the masked greedy run must choose others.
  std::set<int32_t> chosen(greedy_ids.begin(), greedy_ids.end());
  for (int32_t id : request(true, 1).prompt) chosen.erase(id);  // prompts must stay valid
  ASSERT_TRUE(chosen.count(greedy_ids.front())) << "greedy's first token is a prompt token: pick another prompt";
  const std::vector<uint8_t> ok = allowed(m.config.vocab_size, chosen);
  Engine masked(m.artifact, m.config, options(ok));
  const Output g = run(masked, request(true, 24));
  expect_only_allowed(g, ok);
  EXPECT_NE(g.tokens.front().token.id, greedy_ids.front());
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(seed);
    expect_only_allowed(run(masked, request(false, 48, seed)), ok);
  }
}

// Drafts nothing but a masked id: verification must reject every draft, greedy or sampled.
class MaskedDrafter : public ContractDrafter {
 public:
  MaskedDrafter(int64_t hidden, int32_t id) : ContractDrafter(FeatureSpec{}, hidden, 4), id_(id) {}

 protected:
  void guess(const Seq&, std::span<int32_t> out) override { std::fill(out.begin(), out.end(), id_); }

 private:
  int32_t id_;
};

TEST(PaddedVocab, SpeculativeVerificationNeverCommitsAMaskedDraft) {
  Tiny m;
  const std::vector<uint8_t> ok = allowed(m.config.vocab_size);
  std::unique_ptr<ContractDrafter> d = std::make_unique<MaskedDrafter>(m.config.hidden_size, kValid + 5);
  std::shared_ptr<ContractDrafter> keep;
  EngineOptions o = options(ok);
  o.drafter = hand_over(d, keep);
  o.draft_tokens = 3;
  Engine engine(m.artifact, m.config, o);
  const Output g = run(engine, request(true, 16));
  expect_only_allowed(g, ok);
  EXPECT_GT(g.result.spec.drafted_tokens, 0);
  EXPECT_EQ(g.result.spec.accepted_tokens, 0);
  const Output s = run(engine, request(false, 16, 3));
  expect_only_allowed(s, ok);
  EXPECT_EQ(s.result.spec.accepted_tokens, 0);
  EXPECT_EQ(keep->violation, "");
}

TEST(PaddedVocab, PromptIdsOutsideTheTokenizerAreRefused) {
  Tiny m;
  Engine engine(m.artifact, m.config, options(allowed(m.config.vocab_size)));
  EngineRequest r = request(true, 4);
  r.prompt.push_back(kValid + 1);
  SubmitOutcome out = engine.submit(r, std::make_shared<Collector>());
  EXPECT_EQ(out.status, SubmitStatus::kInvalid);
  EXPECT_NE(out.message.find(std::to_string(kValid + 1)), std::string::npos) << out.message;
  EXPECT_THROW({ Engine e(m.artifact, m.config, options(std::vector<uint8_t>(10, 1))); }, ninfer::Error);  // not vocab_size flags
}

TEST(PaddedVocab, TokenizerOutputIdsMarksWhatTheTokenizerLacks) {
  std::ifstream in(std::string(NINFER_TEST_DATA) + "/serve/model/tokenizer.json");
  std::stringstream text;
  text << in.rdbuf();
  const Tokenizer tok = Tokenizer::from_json(text.str());
  ASSERT_EQ(tok.vocab_size(), 512);
  EXPECT_TRUE(server::tokenizer_output_ids(tok, 512).empty()) << "every id exists: nothing to mask";
  const std::vector<uint8_t> ids = server::tokenizer_output_ids(tok, 600);
  ASSERT_EQ(ids.size(), 600u);
  EXPECT_EQ(std::count(ids.begin(), ids.begin() + 512, 1), 512);
  EXPECT_EQ(std::count(ids.begin() + 512, ids.end(), 0), 88);
}

// Throws from on_tokens (the detokenizer of a padded id did) or from on_finish.
class Thrower : public Collector {
 public:
  explicit Thrower(bool in_finish) : in_finish_(in_finish) {}
  void on_tokens(std::span<const OutputToken> t) override {
    Collector::on_tokens(t);
    if (!in_finish_) throw std::runtime_error("token id 399 is not in the vocabulary");
  }
  void on_finish(const RequestResult& r) override {
    Collector::on_finish(r);
    if (in_finish_) throw std::runtime_error("finish failed");
  }

 private:
  bool in_finish_;
};

TEST(EngineObservers, AnObserverThatThrowsEndsOnlyItsRequest) {
  Tiny m;
  Engine engine(m.artifact, m.config, options());
  auto bad = std::make_shared<Thrower>(false);
  auto good = std::make_shared<Collector>();
  ASSERT_TRUE(engine.submit(request(false, 32), bad).accepted());
  ASSERT_TRUE(engine.submit(request(false, 32), good).accepted());
  bad->wait();
  good->wait();
  EXPECT_EQ(bad->result.reason, FinishReason::kError);
  EXPECT_NE(bad->result.error.find("not in the vocabulary"), std::string::npos) << bad->result.error;
  EXPECT_EQ(bad->tokens.size(), 1u) << "the request ends at the token its observer failed on";
  EXPECT_EQ(good->result.reason, FinishReason::kOutputLimit);
  EXPECT_EQ(good->tokens.size(), 32u);
  auto finish_thrower = std::make_shared<Thrower>(true);
  ASSERT_TRUE(engine.submit(request(true, 4), finish_thrower).accepted());
  finish_thrower->wait();
  // the engine still serves, and freed what the failed requests held
  EXPECT_EQ(run(engine, request(true, 8)).tokens.size(), 8u);
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
  EXPECT_EQ(engine.stats().running, 0);
}

}  // namespace
}  // namespace ninfer::testing
