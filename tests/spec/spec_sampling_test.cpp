// Speculative decoding with sampling in the engine: the first generated tokens follow the same distribution with
// and without a drafter (two-sample chi-square over many seeds), and the drafts were both accepted and rejected;
// verification from each row's first top_k pairs gives the whole rows' tokens and verdicts.
#include <gtest/gtest.h>

#include "tests/spec/chi_square.h"
#include "tests/spec/spec_test_util.h"
#include "tests/spec/test_drafters.h"

namespace ninfer::testing {
namespace {

// Each of the 4 homogeneity checks fails a correct engine with probability ≈ 1e-4 (z = 3.719), so the test has a
// false-failure probability below 5e-4; the seeds are fixed, so a run is reproducible.
constexpr double kZ = 3.719;
constexpr int kRequests = 600;

TEST(SpecSampling, FirstTokensFollowTheSameDistributionWithAndWithoutDrafts) {
  ReferenceModel m(ReferenceModel::Packed{kTinyArtifact});
  const auto prompt = random_prompt(6, static_cast<int32_t>(m.config.vocab_size), 17);
  const EngineOptions o{.max_context = 64, .prefill_chunk = 512, .max_concurrency = 8, .threads = 2};
  // The greedy continuation: the oracle's drafts are right whenever sampling picks the greedy token.
  const EngineRun greedy = run_engine(m, o, greedy_requests({prompt}, 4));
  const auto truth = truths(greedy_requests({prompt}, 4), greedy);

  auto requests = [&](uint64_t seed0) {
    std::vector<EngineRequest> reqs;
    for (int i = 0; i < kRequests; ++i) {
      EngineRequest r;
      r.prompt = prompt;
      r.max_tokens = 4;
      r.sampling.temperature = 0.9f, r.sampling.top_k = 6, r.sampling.top_p = 0.95f;
      r.sampling.seed = seed0 + static_cast<uint64_t>(i);
      reqs.push_back(r);
    }
    return reqs;
  };
  const EngineRun plain = run_engine(m, o, requests(1));
  std::unique_ptr<ContractDrafter> d = std::make_unique<OracleDrafter>(FeatureSpec{}, m.config.hidden_size,
                                                                       int32_t(m.config.vocab_size), truth);
  std::shared_ptr<ContractDrafter> keep;
  EngineOptions so = o;
  so.drafter = hand_over(d, keep);
  so.draft_tokens = 3;
  const EngineRun spec = run_engine(m, so, requests(1000001));  // other seeds: independent samples
  EXPECT_EQ(keep->violation, "");
  const SpecStats& st = spec.stats.spec;
  EXPECT_GT(st.accepted_tokens, kRequests / 10) << "the accept path must be exercised";
  EXPECT_LT(st.accepted_tokens, st.drafted_tokens) << "the reject path must be exercised";
  // top_k 6 with nothing else: the verify rows came back as their first 6 pairs (Sampler::verify_top); the host's
  // verification of whole rows draws the same tokens and verdicts from the same seeds.
  EXPECT_GT(spec.stats.top_rows, 0);
  std::unique_ptr<ContractDrafter> d2 = std::make_unique<OracleDrafter>(FeatureSpec{}, m.config.hidden_size,
                                                                        int32_t(m.config.vocab_size), truth);
  std::shared_ptr<ContractDrafter> keep2;
  EngineOptions rows_o = so;
  rows_o.drafter = hand_over(d2, keep2);
  rows_o.backend_choice = false;
  const EngineRun spec_rows = run_engine(m, rows_o, requests(1000001));
  EXPECT_EQ(keep2->violation, "");
  EXPECT_EQ(spec_rows.stats.top_rows, 0);
  EXPECT_EQ(spec_rows.tokens, spec.tokens);
  EXPECT_EQ(spec_rows.stats.spec.accepted_tokens, st.accepted_tokens);
  EXPECT_EQ(spec_rows.stats.spec.accepted_at, st.accepted_at);

  // Marginals of tokens 1..3 and the joint of tokens 1 and 2.
  auto histogram = [](const EngineRun& r, auto key) {
    std::map<int64_t, int64_t> h;
    for (const auto& t : r.tokens) h[key(t)]++;
    return h;
  };
  for (size_t pos = 0; pos < 3; ++pos) {
    auto key = [pos](const std::vector<int32_t>& t) { return int64_t{t.at(pos)}; };
    const ChiSquare c = homogeneity(histogram(plain, key), histogram(spec, key));
    EXPECT_TRUE(c.ok(kZ)) << "token " << pos + 1 << ": chi2 " << c.stat << " df " << c.df;
    EXPECT_GE(c.df, 1) << "token " << pos + 1 << " is not random at all";
  }
  auto pair = [](const std::vector<int32_t>& t) { return int64_t{t.at(0)} * 1000000 + t.at(1); };
  const ChiSquare c = homogeneity(histogram(plain, pair), histogram(spec, pair));
  EXPECT_TRUE(c.ok(kZ)) << "tokens 1-2: chi2 " << c.stat << " df " << c.df;
}

// The homogeneity check itself rejects clearly different distributions (so the test above can fail).
TEST(SpecSampling, HomogeneityDetectsADifference) {
  std::mt19937_64 rng(3);
  std::discrete_distribution<int> a{0.5, 0.3, 0.2};
  std::map<int64_t, int64_t> ha, ha2;
  for (int i = 0; i < kRequests; ++i) ha[a(rng)]++, ha2[a(rng)]++;
  EXPECT_TRUE(homogeneity(ha, ha2).ok(kZ));
  std::discrete_distribution<int> far{0.2, 0.3, 0.5};
  std::map<int64_t, int64_t> hf;
  for (int i = 0; i < kRequests; ++i) hf[far(rng)]++;
  EXPECT_FALSE(homogeneity(ha, hf).ok(kZ));
}

}  // namespace
}  // namespace ninfer::testing
