// Sampler: processors against hand-computed distributions, seeded determinism, logprobs.
#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/runtime/sampling.h"

namespace ninfer {
namespace {

std::map<int32_t, int> histogram(const SamplingParams& p, std::vector<float> logits, int draws, uint64_t seed = 7) {
  Sampler s(p, seed, {});
  std::map<int32_t, int> h;
  for (int i = 0; i < draws; ++i) {
    auto l = logits;
    h[s.sample(l).id]++;
  }
  return h;
}

TEST(Sampling, GreedyAndTemperatureZeroTakeTheArgmax) {
  SamplingParams p;
  p.greedy = true;
  EXPECT_EQ(histogram(p, {0.1f, 2.0f, 1.0f}, 50)[1], 50);
  SamplingParams t0;
  t0.temperature = 0.0f;
  EXPECT_EQ(histogram(t0, {3.0f, 2.0f, 1.0f}, 50)[0], 50);
}

TEST(Sampling, TemperatureOneFollowsTheSoftmax) {
  // p ∝ exp(logit): logits log 1, log 2, log 3 → 1/6, 2/6, 3/6.
  SamplingParams p;
  auto h = histogram(p, {0.0f, std::log(2.0f), std::log(3.0f)}, 30000);
  EXPECT_NEAR(h[0] / 30000.0, 1.0 / 6, 0.01);
  EXPECT_NEAR(h[1] / 30000.0, 2.0 / 6, 0.01);
  EXPECT_NEAR(h[2] / 30000.0, 3.0 / 6, 0.01);
  // Temperature 0.5 squares the odds: 1, 4, 9 → 1/14, 4/14, 9/14.
  p.temperature = 0.5f;
  h = histogram(p, {0.0f, std::log(2.0f), std::log(3.0f)}, 30000);
  EXPECT_NEAR(h[2] / 30000.0, 9.0 / 14, 0.01);
}

TEST(Sampling, TopKTopPMinPCutTheTail) {
  std::vector<float> logits{0.0f, std::log(2.0f), std::log(3.0f), std::log(4.0f)};  // 0.1 0.2 0.3 0.4
  SamplingParams k;
  k.top_k = 2;
  auto h = histogram(k, logits, 20000);
  EXPECT_EQ(h[0] + h[1], 0);
  EXPECT_NEAR(h[3] / 20000.0, 4.0 / 7, 0.015);
  SamplingParams tp;
  tp.top_p = 0.65f;  // 0.4 + 0.3 = 0.7 ≥ 0.65: ids 3 and 2 stay
  h = histogram(tp, logits, 20000);
  EXPECT_EQ(h[0] + h[1], 0);
  SamplingParams mp;
  mp.min_p = 0.6f;  // keeps p ≥ 0.24: ids 2 (0.3) and 3 (0.4)
  h = histogram(mp, logits, 20000);
  EXPECT_EQ(h[0] + h[1], 0);
  EXPECT_GT(h[2], 0);
}

TEST(Sampling, PenaltiesFollowTheirFormulas) {
  SamplingParams p;
  p.greedy = true;
  p.repetition_penalty = 2.0f;
  std::vector<int32_t> prompt{0};
  Sampler s(p, 1, prompt);
  std::vector<float> l{3.0f, 2.0f, -1.0f};  // id 0 seen: 3 / 2 = 1.5 < 2 → id 1 wins
  EXPECT_EQ(s.sample(l).id, 1);
  EXPECT_FLOAT_EQ(l[0], 1.5f);
  // id 1 is now seen too: 2 / 2 = 1; id 0: 1.5; id 2 unseen stays -1.
  std::vector<float> l2{3.0f, 2.0f, -1.0f};
  EXPECT_EQ(s.sample(l2).id, 0);
  EXPECT_FLOAT_EQ(l2[1], 1.0f);

  SamplingParams f;
  f.greedy = true;
  f.presence_penalty = 0.5f;
  f.frequency_penalty = 1.0f;
  Sampler sf(f, 1, prompt);  // presence/frequency look at output tokens only: the prompt's id 0 is free
  std::vector<float> a{2.0f, 1.8f};
  EXPECT_EQ(sf.sample(a).id, 0);
  std::vector<float> b{2.0f, 1.8f};  // id 0 once: 2 − 0.5 − 1 = 0.5
  EXPECT_EQ(sf.sample(b).id, 1);
  EXPECT_FLOAT_EQ(b[0], 0.5f);
}

TEST(Sampling, SameSeedSameStreamAndLogprobsAreRawLogSoftmax) {
  SamplingParams p;
  p.seed = 1234;
  p.logprobs = true;
  p.top_logprobs = 2;
  std::vector<float> logits{0.5f, 1.0f, 0.2f, 0.9f};
  Sampler a(p, 1, {}), b(p, 999, {});
  for (int i = 0; i < 50; ++i) {
    auto la = logits, lb = logits;
    auto ta = a.sample(la), tb = b.sample(lb);
    ASSERT_EQ(ta.id, tb.id);
    double lse = std::log(std::exp(0.5) + std::exp(1.0) + std::exp(0.2) + std::exp(0.9));
    EXPECT_NEAR(ta.logprob, logits[static_cast<size_t>(ta.id)] - lse, 1e-5);
    ASSERT_EQ(ta.top.size(), 2u);
    EXPECT_EQ(ta.top[0].first, 1);
    EXPECT_EQ(ta.top[1].first, 3);
    EXPECT_NEAR(ta.top[0].second, 1.0 - lse, 1e-5);
  }
}

TEST(Sampling, LogitBiasShiftsAndBansButLogprobsStayRaw) {
  const std::vector<float> logits{0.5f, 1.0f, 0.2f, 0.9f};
  const double lse = std::log(std::exp(0.5) + std::exp(1.0) + std::exp(0.2) + std::exp(0.9));
  SamplingParams p;
  p.greedy = true;
  p.logprobs = true;
  p.logit_bias = {{2, 5.0f}};  // 0.2 + 5 is the argmax now
  Sampler s(p, 1, {});
  auto l = logits;
  const SampledToken t = s.sample(l);
  EXPECT_EQ(t.id, 2);
  EXPECT_NEAR(t.logprob, 0.2 - lse, 1e-5) << "the model's own logprob, before the bias";
  p.logit_bias = {{1, -100.0f}, {3, -100.0f}};  // bans the two best: the argmax is token 0
  EXPECT_EQ(histogram(p, logits, 20)[0], 20);
  SamplingParams sampled;
  sampled.logit_bias = {{1, -100.0f}};
  const auto h = histogram(sampled, logits, 5000);
  EXPECT_EQ(h.count(1), 0u) << "-100 bans the token under sampling too";
  // p ∝ exp(logit) over {0, 2, 3}.
  const double z = std::exp(0.5) + std::exp(0.2) + std::exp(0.9);
  EXPECT_NEAR(h.at(3) / 5000.0, std::exp(0.9) / z, 0.02);
  SamplingParams all;
  all.logit_bias = {{0, -100.0f}, {1, -100.0f}, {2, -100.0f}, {3, -100.0f}};
  Sampler none(all, 1, {});
  auto l2 = logits;
  EXPECT_THROW(none.sample(l2), Error) << "nothing left to choose is an error of the request, not a guess";
}

}  // namespace
}  // namespace ninfer
