// Speculative decoding's edges in the engine: bad K, a failing or out-of-vocabulary drafter (the step's requests end
// with kError, the engine keeps serving), and cancel mid-speculation (KV and the drafter's sequence freed).
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "tests/spec/spec_test_util.h"
#include "tests/spec/test_drafters.h"

namespace ninfer::testing {
namespace {

// Drafts `token` after `after` good proposals, or throws instead when `token` < 0.
class FaultyDrafter : public RandomDrafter {
 public:
  FaultyDrafter(const ModelConfig& c, int after, int32_t token)
      : RandomDrafter(FeatureSpec{}, c.hidden_size, int32_t(c.vocab_size), 5), after_(after), token_(token) {}

 protected:
  void guess(const Seq& s, std::span<int32_t> out) override {
    RandomDrafter::guess(s, out);
    if (++calls_ <= after_) return;
    if (token_ < 0) throw Error(ErrorKind::kInternal, "drafter exploded");
    out[0] = token_;
  }

 private:
  int after_, calls_ = 0;
  int32_t token_;
};

struct SpecErrors : ::testing::Test {
  SpecErrors() : m(ReferenceModel::Packed{kTinyArtifact}) {}
  EngineOptions options(std::unique_ptr<ContractDrafter> d, int32_t k) {
    EngineOptions o{.max_context = 128, .prefill_chunk = 64, .max_concurrency = 2, .threads = 2};
    o.drafter = hand_over(d, drafter);
    o.draft_tokens = k;
    return o;
  }
  ReferenceModel m;
  std::shared_ptr<ContractDrafter> drafter;
};

TEST_F(SpecErrors, DraftTokensOutsideTheDraftersRangeAreRefused) {
  auto d = std::make_unique<OracleDrafter>(FeatureSpec{}, m.config.hidden_size, int32_t(m.config.vocab_size),
                                           std::vector<std::vector<int32_t>>{});
  EXPECT_THROW(Engine(*m.artifact, m.config, options(std::move(d), 17)), Error);  // max_draft_tokens() is 16
  auto d0 = std::make_unique<RandomDrafter>(FeatureSpec{}, m.config.hidden_size, int32_t(m.config.vocab_size), 1);
  EXPECT_THROW(Engine(*m.artifact, m.config, options(std::move(d0), 0)), Error);
}

TEST_F(SpecErrors, AFailingDrafterFailsItsStepsRequestsAndTheEngineGoesOn) {
  for (int32_t bad : {-1, int32_t(m.config.vocab_size) + 3}) {
    auto d = std::make_unique<FaultyDrafter>(m.config, 3, bad);
    Engine engine(*m.artifact, m.config, options(std::move(d), 3));
    const auto reqs = greedy_requests({random_prompt(8, int32_t(m.config.vocab_size), 4)}, 30);
    auto c = std::make_shared<Collector>();
    ASSERT_TRUE(engine.submit(reqs[0], c).accepted());
    c->wait();
    EXPECT_EQ(c->result.reason, FinishReason::kError) << bad;
    EXPECT_NE(c->result.error.find(bad < 0 ? "drafter exploded" : "outside"), std::string::npos) << c->result.error;
    EXPECT_EQ(engine.stats().kv_blocks_used, 0);
    EXPECT_EQ(drafter->released, 1);
    // The next request runs (this drafter keeps failing after its third proposal, so it fails again, cleanly).
    auto c2 = std::make_shared<Collector>();
    ASSERT_TRUE(engine.submit(reqs[0], c2).accepted());
    c2->wait();
    EXPECT_EQ(c2->result.reason, FinishReason::kError);
    EXPECT_EQ(drafter->violation, "");
  }
}

TEST_F(SpecErrors, CancelDuringSpeculationFreesEverything) {
  auto d = std::make_unique<RandomDrafter>(FeatureSpec{{2}, false}, m.config.hidden_size, int32_t(m.config.vocab_size), 8);
  Engine engine(*m.artifact, m.config, options(std::move(d), 4));
  EngineRequest r;
  r.prompt = random_prompt(10, int32_t(m.config.vocab_size), 6);
  r.sampling.greedy = true;  // no max_tokens: runs to the context limit unless cancelled
  auto c = std::make_shared<Collector>();
  const auto id = engine.submit(r, c).id;
  c->wait_tokens(5);
  engine.cancel(id);
  c->wait();
  EXPECT_EQ(c->result.reason, FinishReason::kCancelled);
  EXPECT_GT(c->result.spec.verify_steps, 0);
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
  EXPECT_EQ(drafter->released, 1);
  EXPECT_EQ(drafter->violation, "");
}

}  // namespace
}  // namespace ninfer::testing
