// Sampler: processors against hand-computed distributions, seeded determinism, logprobs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>

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

// The row's first n (value, id) pairs, sorted here by value then id with a plain std::sort (independent of
// Backend::top_k_rows, whose own test checks it gives the same): (NaN, -1) past the row.
std::vector<float> first_pairs(const std::vector<float>& row, size_t n) {
  std::vector<int32_t> ids(row.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return row[static_cast<size_t>(a)] > row[static_cast<size_t>(b)] ||
           (row[static_cast<size_t>(a)] == row[static_cast<size_t>(b)] && a < b);
  });
  std::vector<float> pairs;
  for (size_t j = 0; j < n; ++j) {
    pairs.push_back(j < ids.size() ? row[static_cast<size_t>(ids[j])] : std::numeric_limits<float>::quiet_NaN());
    pairs.push_back(j < ids.size() ? static_cast<float>(ids[j]) : -1.0f);
  }
  return pairs;
}

// A sampler that needs only the row's first pairs (candidates_needed: 1 for greedy, top_k for a plain top-k draw)
// draws from them exactly what it draws from the whole row: the same ids, verdicts and random stream, step after
// step, over temperatures, top_p, min_p, masked (-inf) ids, ties, more pairs than needed and rows shorter than top_k.
TEST(Sampling, TopPairsDrawWhatTheWholeRowDraws) {
  const float inf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  int cases = 0;
  for (int32_t top_k : {1, 2, 5, 20, 64, 299, 300, 500})
    for (float temperature : {0.0f, 0.3f, 1.0f, 1.7f})
      for (auto [top_p, min_p] : {std::pair{1.0f, 0.0f}, {0.9f, 0.0f}, {0.5f, 0.05f}, {1.0f, 0.2f}}) {
        SamplingParams p;
        p.top_k = top_k, p.temperature = temperature, p.top_p = top_p, p.min_p = min_p;
        Sampler whole(p, 99, {}), top(p, 99, {});
        const int32_t need = top.candidates_needed();
        ASSERT_EQ(need, temperature == 0.0f ? 1 : top_k);
        for (int step = 0; step < 40; ++step) {
          std::vector<float> row(300);
          for (float& v : row) v = std::round(u(rng) * 3) / 3;  // ties
          for (size_t i = 0; i < row.size(); i += 7) row[i] = -inf;  // masked ids
          const std::vector<float> pairs = first_pairs(row, static_cast<size_t>(need) + static_cast<size_t>(step % 3));
          auto copy = row;
          if (step % 2 == 0) {
            const int32_t a = whole.sample(copy).id, b = top.sample_top(pairs).id;
            ASSERT_EQ(a, b) << "top_k " << top_k << " t " << temperature << " top_p " << top_p << " step " << step;
          } else {
            const int32_t draft = static_cast<int32_t>(pairs[2 * static_cast<size_t>(step % std::min(need, 4)) + 1]);
            bool ok_whole = false, ok_top = false;
            const int32_t a = whole.verify(copy, draft, ok_whole).id, b = top.verify_top(pairs, draft, ok_top).id;
            ASSERT_EQ(a, b) << "verify, top_k " << top_k << " t " << temperature << " step " << step;
            ASSERT_EQ(ok_whole, ok_top);
          }
          ++cases;
        }
      }
  EXPECT_EQ(cases, 8 * 4 * 4 * 40);
}

// Only plain samplers draw from pairs: logprobs, logit_bias, penalties or no top_k need the row (0), and fewer pairs
// than needed are refused.
TEST(Sampling, CandidatesNeededAreZeroWhereTheRowMatters) {
  SamplingParams p;
  p.top_k = 20;
  EXPECT_EQ(Sampler(p, 1, {}).candidates_needed(), 20);
  EXPECT_FALSE(Sampler(p, 1, {}).plain_greedy());
  for (int which = 0; which < 6; ++which) {
    SamplingParams q = p;
    if (which == 0) q.logprobs = true;
    if (which == 1) q.top_logprobs = 2;
    if (which == 2) q.logit_bias = {{3, 1.0f}};
    if (which == 3) q.presence_penalty = 0.5f;
    if (which == 4) q.repetition_penalty = 1.1f;
    if (which == 5) q.top_k = 0;
    EXPECT_EQ(Sampler(q, 1, {}).candidates_needed(), 0) << which;
  }
  SamplingParams g;
  g.greedy = true;
  EXPECT_EQ(Sampler(g, 1, {}).candidates_needed(), 1);
  EXPECT_TRUE(Sampler(g, 1, {}).plain_greedy());
  Sampler s(p, 1, {});
  const std::vector<float> few = first_pairs(std::vector<float>(30, 1.0f), 19);
  EXPECT_THROW(s.sample_top(few), Error);
  SamplingParams bias = p;
  bias.logit_bias = {{3, 1.0f}};
  Sampler b(bias, 1, {});
  EXPECT_THROW(b.sample_top(first_pairs(std::vector<float>(30, 1.0f), 20)), Error);
}

}  // namespace
}  // namespace ninfer
