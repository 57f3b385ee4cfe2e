// The engine with the shipped DFlash2 drafter (--spec dflash2): greedy output equals plain greedy decoding, K = 1..7.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "engine/core/error.h"
#include "engine/model/model_artifact.h"
#include "engine/runtime/engine.h"
#include "engine/speculative/drafter_registry.h"
#include "tests/dflash2/dflash2_fixtures.h"
#include "tests/support/greedy_engine_run.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

using dflash2_test::kArtifact;

// Prompts of different lengths: prompt 0 of the ninfer-tiny fixtures, the DFlash2 fixture text, a slice, one token.
std::vector<std::vector<int32_t>> prompts() {
  std::string b = testing::read_file(std::string(NINFER_TEST_DATA) + "/ninfer_tiny/prompt0_tokens.i32");
  std::vector<int32_t> p0(b.size() / 4);
  std::memcpy(p0.data(), b.data(), b.size());
  const std::vector<int32_t> text = dflash2_test::read_fixture<int32_t>("tokens");
  return {p0, text, std::vector<int32_t>(text.begin(), text.begin() + 9), {8160}};
}

testing::GreedyRun run(const Artifact& a, const ModelConfig& c, int32_t k, bool draft_head, int64_t chunk) {
  const DrafterFactory f = k > 0 ? make_drafter_factory("dflash2", a, c, draft_head) : DrafterFactory{};
  return testing::run_greedy(a, c, f, k, chunk, prompts());
}

TEST(Dflash2Engine, GreedyOutputEqualsPlainForEveryKChunkedPrefillAndBatch) {
  Artifact a = Artifact::open(kArtifact);
  ModelConfig c = load_model_config(a);
  for (int64_t chunk : {int64_t{512}, int64_t{7}}) {
    const testing::GreedyRun plain = run(a, c, 0, false, chunk);
    for (const auto& o : plain.outputs) ASSERT_EQ(o.size(), 40u);
    for (int32_t k = 1; k <= 7; ++k) {
      for (bool draft_head : {false, true}) {
        if (draft_head && k != 7) continue;  // the draft head once; the full head at every K
        SCOPED_TRACE(::testing::Message() << "K=" << k << (draft_head ? " draft head" : "") << " prefill chunk "
                                          << chunk);
        const testing::GreedyRun spec = run(a, c, k, draft_head, chunk);
        EXPECT_EQ(spec.outputs, plain.outputs);
        int64_t accepted = 0;
        for (const RequestResult& r : spec.results) {
          const SpecStats& s = r.spec;
          EXPECT_GT(s.verify_steps, 0);
          EXPECT_LE(s.accepted_tokens, s.drafted_tokens);
          EXPECT_LE(s.drafted_tokens, s.verify_steps * k);
          EXPECT_EQ(std::accumulate(s.accepted_at.begin(), s.accepted_at.end(), int64_t{0}), s.accepted_tokens);
          EXPECT_LE(s.accepted_tokens + s.verify_steps, r.completion_tokens);
          accepted += s.accepted_tokens;
        }
        // A drafter fed the wrong layers, positions or anchor proposes nothing the target accepts.
        EXPECT_GT(accepted, 0);
      }
    }
  }
}

TEST(Dflash2Engine, MoreDraftTokensThanTheBlockIsRefused) {
  Artifact a = Artifact::open(kArtifact);
  ModelConfig c = load_model_config(a);
  EngineOptions o{.max_context = 256, .max_concurrency = 2, .threads = 2, .greedy = true};
  o.drafter = make_drafter_factory("dflash2", a, c, false);
  o.draft_tokens = 8;
  EXPECT_THROW((Engine(a, c, o)), Error);
}

}  // namespace
}  // namespace ninfer
