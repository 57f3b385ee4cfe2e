// Rejection sampling: committed tokens follow the target distribution p for one-hot and general proposals q
// (chi-square goodness of fit, fixed seeds), acceptance rates, and the Sampler's processed distribution.
#include <numeric>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/runtime/sampling.h"
#include "engine/speculative/rejection_sampler.h"
#include "tests/spec/chi_square.h"

namespace ninfer::testing {
namespace {

// Every chi-square check below fails a correct sampler with probability ≤ 1e-6 (z = 4.753); there are fewer than 40
// of them, so a false failure has probability < 4e-5 (and the fixed seeds make each run identical anyway).
constexpr double kZ = 4.753;
constexpr int64_t kSamples = 200000;

const std::vector<std::vector<double>> kTargets = {
    {0.4, 0.3, 0.15, 0.1, 0.05, 0.0},  // a zero-probability token
    {0.05, 0.05, 0.1, 0.1, 0.3, 0.4},
    {0.0, 0.0, 1.0, 0.0, 0.0, 0.0},    // greedy-like one-hot target
    {1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6},
};
const std::vector<std::vector<double>> kProposals = {
    {0.1, 0.1, 0.2, 0.2, 0.2, 0.2},
    {0.0, 0.0, 0.0, 0.5, 0.0, 0.5},    // support disjoint from most of p
    {0.0, 0.0, 0.0, 0.0, 0.0, 1.0},    // one-hot, on a token p may not have
    {0.4, 0.3, 0.15, 0.1, 0.05, 0.0},  // equal to the first target
};

TEST(RejectionSampler, GeneralProposalGivesTheTarget) {
  std::mt19937_64 rng(1234);
  for (size_t a = 0; a < kTargets.size(); ++a)
    for (size_t b = 0; b < kProposals.size(); ++b) {
      const auto &p = kTargets[a], &q = kProposals[b];
      std::discrete_distribution<int32_t> draw(q.begin(), q.end());
      std::vector<int64_t> counts(p.size(), 0);
      int64_t accepted = 0;
      for (int64_t i = 0; i < kSamples; ++i) {
        const int32_t d = draw(rng);
        const DraftVerdict v = verify_draft(p, q, d, rng);
        counts[static_cast<size_t>(v.token)]++;
        accepted += v.accepted;
        if (v.accepted) {
          ASSERT_EQ(v.token, d);
        }
      }
      const ChiSquare c = goodness_of_fit(counts, p);
      EXPECT_TRUE(c.ok(kZ)) << "p " << a << " q " << b << ": chi2 " << c.stat << " df " << c.df;
      // P(accept) = Σ min(p, q) = 1 − TV(p, q)
      double overlap = 0;
      for (size_t i = 0; i < p.size(); ++i) overlap += std::min(p[i], q[i]);
      const double sd = std::sqrt(overlap * (1 - overlap) / kSamples);
      EXPECT_NEAR(double(accepted) / kSamples, overlap, 5 * sd + 1e-9) << "p " << a << " q " << b;
    }
}

// One-hot q = δ(d) for EVERY fixed draft d: the output is p whatever the drafter proposes.
TEST(RejectionSampler, OneHotProposalGivesTheTargetForAnyDraft) {
  std::mt19937_64 rng(99);
  for (size_t a = 0; a < kTargets.size(); ++a) {
    const auto& p = kTargets[a];
    // sparse, unnormalised, in a shuffled order, as the Sampler hands it over
    std::vector<int32_t> ids{4, 0, 2, 5, 1, 3};
    std::vector<double> w;
    for (int32_t id : ids) w.push_back(3.0 * p[static_cast<size_t>(id)]);
    const TokenDist dist{ids, w, std::accumulate(w.begin(), w.end(), 0.0)};
    for (int32_t d = 0; d < 6; ++d) {
      std::vector<int64_t> counts(p.size(), 0);
      int64_t accepted = 0;
      for (int64_t i = 0; i < kSamples / 4; ++i) {
        const DraftVerdict v = verify_one_hot(dist, d, rng);
        counts[static_cast<size_t>(v.token)]++;
        accepted += v.accepted;
        if (!v.accepted) {
          ASSERT_NE(v.token, d);
        }
      }
      const ChiSquare c = goodness_of_fit(counts, p);
      EXPECT_TRUE(c.ok(kZ)) << "p " << a << " draft " << d << ": chi2 " << c.stat << " df " << c.df;
      const double pd = p[static_cast<size_t>(d)], sd = std::sqrt(pd * (1 - pd) / (kSamples / 4));
      EXPECT_NEAR(double(accepted) / (kSamples / 4), pd, 5 * sd + 1e-9) << "p " << a << " draft " << d;
    }
  }
}

TEST(RejectionSampler, RejectsInvalidProposals) {
  std::mt19937_64 rng(1);
  const std::vector<double> p{0.5, 0.5}, q{1.0, 0.0}, short_q{1.0};
  EXPECT_THROW(verify_draft(p, q, 1, rng), Error);        // q(draft) = 0: the draft cannot come from q
  EXPECT_THROW(verify_draft(p, short_q, 0, rng), Error);  // sizes differ
  EXPECT_THROW(verify_draft(p, q, 2, rng), Error);        // outside the vocabulary
}

// Sampler::verify draws from the same processed distribution as Sampler::sample (temperature, top-k, top-p, min-p),
// for a draft inside and outside the kept set.
TEST(RejectionSampler, SamplerVerifyFollowsTheSamplersDistribution) {
  const std::vector<float> logits{2.0f, 1.5f, 1.4f, 0.3f, -0.5f, -1.0f, 0.9f, 1.45f};
  SamplingParams sp;
  sp.temperature = 0.8f, sp.top_k = 6, sp.top_p = 0.93f, sp.min_p = 0.05f;
  Sampler reference(sp, 5, {});
  std::vector<float> row = logits;
  const TokenDist d = reference.distribution(row);
  std::vector<double> p(logits.size(), 0.0);
  for (size_t i = 0; i < d.ids.size(); ++i) p[static_cast<size_t>(d.ids[i])] = d.weights[i] / d.total;
  EXPECT_LT(d.ids.size(), logits.size());  // the processors did cut something
  EXPECT_EQ(p[5], 0.0);
  for (int32_t draft : {0, 2, 5}) {
    Sampler s(sp, 77 + static_cast<uint64_t>(draft), {});
    std::vector<int64_t> verified(logits.size(), 0), sampled(logits.size(), 0);
    for (int64_t i = 0; i < kSamples / 4; ++i) {
      bool ok = false;
      row = logits;
      verified[static_cast<size_t>(s.verify(row, draft, ok).id)]++;
      row = logits;
      sampled[static_cast<size_t>(s.sample(row).id)]++;
    }
    const ChiSquare cv = goodness_of_fit(verified, p), cs = goodness_of_fit(sampled, p);
    EXPECT_TRUE(cv.ok(kZ)) << "draft " << draft << ": chi2 " << cv.stat << " df " << cv.df;
    EXPECT_TRUE(cs.ok(kZ)) << "sample: chi2 " << cs.stat << " df " << cs.df;
  }
  // greedy: accepted iff the draft is the argmax, which it returns either way
  SamplingParams g;
  g.greedy = true;
  Sampler gs(g, 1, {});
  bool ok = false;
  row = logits;
  EXPECT_EQ(gs.verify(row, 0, ok).id, 0);
  EXPECT_TRUE(ok);
  row = logits;
  EXPECT_EQ(gs.verify(row, 7, ok).id, 0);
  EXPECT_FALSE(ok);
}

}  // namespace
}  // namespace ninfer::testing
