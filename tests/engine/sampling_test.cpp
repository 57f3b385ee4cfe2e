// Sampler: processors against hand-computed distributions, seeded determinism, logprobs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/constrain/think_stop_mask.h"
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

// Logprobs, a constraint or no top_k need the row (0); logit_bias and penalties do not (they are edits of the row,
// Sampler::logit_edits), but a greedy sampler with a logit_bias is no plain argmax (the "all banned" error needs the
// best value). Fewer pairs than needed are refused, and pairs whose best is −inf under a logit_bias are "all banned".
TEST(Sampling, CandidatesNeededAreZeroWhereTheRowMatters) {
  SamplingParams p;
  p.top_k = 20;
  EXPECT_EQ(Sampler(p, 1, {}).candidates_needed(), 20);
  EXPECT_FALSE(Sampler(p, 1, {}).plain_greedy());
  for (int which = 0; which < 6; ++which) {
    SamplingParams q = p;
    if (which == 0) q.logprobs = true;
    if (which == 1) q.top_logprobs = 2;
    if (which == 2) q.top_k = 0;
    if (which == 3) q.logit_bias = {{3, 1.0f}};
    if (which == 4) q.presence_penalty = 0.5f, q.frequency_penalty = 0.25f;
    if (which == 5) q.repetition_penalty = 1.1f;
    EXPECT_EQ(Sampler(q, 1, {}).candidates_needed(), which < 3 ? 0 : 20) << which;
    EXPECT_EQ(Sampler(q, 1, {}).edits_logits(), which >= 3) << which;
  }
  SamplingParams g;
  g.greedy = true;
  EXPECT_EQ(Sampler(g, 1, {}).candidates_needed(), 1);
  EXPECT_TRUE(Sampler(g, 1, {}).plain_greedy());
  g.repetition_penalty = 1.3f;
  EXPECT_TRUE(Sampler(g, 1, {}).plain_greedy());
  g.logit_bias = {{3, 1.0f}};
  EXPECT_EQ(Sampler(g, 1, {}).candidates_needed(), 1);
  EXPECT_FALSE(Sampler(g, 1, {}).plain_greedy());
  Sampler s(p, 1, {});
  const std::vector<float> few = first_pairs(std::vector<float>(30, 1.0f), 19);
  EXPECT_THROW(s.sample_top(few), Error);
  SamplingParams bias = p;
  bias.logit_bias = {{3, 1.0f}};
  Sampler b(bias, 1, {});
  EXPECT_NO_THROW(b.sample_top(first_pairs(std::vector<float>(30, 1.0f), 20)));
  EXPECT_THROW(b.sample_top(first_pairs(std::vector<float>(30, -std::numeric_limits<float>::infinity()), 20)), Error);
  bias.logit_bias = {{3, 1.0f}, {3, 2.0f}};
  EXPECT_THROW(Sampler(bias, 1, {}), Error);  // one id, two biases
}

// Sampler::logit_edits against hand-computed edits: one per id in ascending order, the bias (−inf for −100 or less),
// the repetition penalty over prompt and output, presence + frequency · count over the output, the tokens `ahead`
// counted as output, ids outside the vocabulary dropped; a sampler without such processors gives none.
TEST(Sampling, LogitEditsAreTheProcessorsOfEachId) {
  const float inf = std::numeric_limits<float>::infinity();
  SamplingParams p;
  p.logit_bias = {{9, 2.5f}, {4, -100.0f}, {50, 1.0f}};
  p.repetition_penalty = 1.25f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  const std::vector<int32_t> prompt = {7, 3, 7};
  Sampler s(p, 1, prompt);
  s.observe(9), s.observe(5), s.observe(5);
  std::vector<LogitEdit> e;
  s.logit_edits({}, 2, 20, e);
  ASSERT_EQ(e.size(), 5u);  // ids 3, 4, 5, 7, 9 (50 is past the vocabulary)
  const auto expect = [&](size_t i, int32_t col, float add, float scale, float sub) {
    EXPECT_EQ(e[i].row, 2) << i;
    EXPECT_EQ(e[i].col, col) << i;
    EXPECT_EQ(e[i].add, add) << i;
    EXPECT_EQ(std::signbit(e[i].add), std::signbit(add)) << i;
    EXPECT_EQ(e[i].scale, scale) << i;
    EXPECT_EQ(e[i].sub, sub) << i;
  };
  expect(0, 3, -0.0f, 1.25f, 0.0f);         // prompt
  expect(1, 4, -inf, 1.0f, 0.0f);           // banned
  expect(2, 5, -0.0f, 1.25f, 0.5f + 0.25f * 2);  // output twice
  expect(3, 7, -0.0f, 1.25f, 0.0f);         // prompt (twice: still one penalty)
  expect(4, 9, 2.5f, 1.25f, 0.5f + 0.25f);  // bias and output once
  e.clear();
  const std::vector<int32_t> ahead = {5, 11, 11};
  s.logit_edits(ahead, 2, 20, e);
  ASSERT_EQ(e.size(), 6u);
  expect(2, 5, -0.0f, 1.25f, 0.5f + 0.25f * 3);
  EXPECT_EQ(e[5].col, 11);
  EXPECT_EQ(e[5].scale, 1.25f);
  EXPECT_EQ(e[5].sub, 0.5f + 0.25f * 2);
  SamplingParams plain;
  plain.top_k = 5;
  Sampler none(plain, 1, prompt);
  none.observe(2);
  e.clear();
  none.logit_edits(ahead, 0, 20, e);
  EXPECT_TRUE(e.empty());
}

// A think block's stop mask (ThinkStopMask: a set of banned ids) is applied as logit edits: the sampler needs pairs,
// not the row; the edits ban the stop ids until </think> (also when </think> is a draft ahead); a greedy sampler with
// it takes one pair (not plain argmax); pairs whose best is −inf are "all banned"; the host row path gives the same
// tokens. A constraint that is no set of bans needs the row, and logit_edits refuses it.
TEST(Sampling, AThinkStopMaskIsAppliedAsEdits) {
  const float inf = std::numeric_limits<float>::infinity();
  constexpr int32_t V = 40, kEnd = 7;
  const std::vector<int32_t> stops = {3, 11};
  SamplingParams p;
  p.top_k = 8, p.temperature = 0.9f, p.presence_penalty = 0.5f;
  ThinkStopMask mask_whole(stops, kEnd, nullptr), mask_top(stops, kEnd, nullptr);
  Sampler whole(p, 3, {}), top(p, 3, {});
  whole.set_constraint(&mask_whole), top.set_constraint(&mask_top);
  EXPECT_EQ(top.candidates_needed(), 8);
  EXPECT_TRUE(top.edits_logits());
  std::vector<LogitEdit> e;
  const std::vector<int32_t> ahead = {5, kEnd};
  top.logit_edits(std::span(ahead).first(1), 0, V, e);
  ASSERT_EQ(e.size(), 3u);  // 3 and 11 banned; 5 (ahead) penalised
  EXPECT_EQ(e[0].col, 3);
  EXPECT_EQ(e[0].add, -inf);
  EXPECT_EQ(e[1].col, 5);
  EXPECT_EQ(e[1].sub, 0.5f);
  EXPECT_EQ(e[2].col, 11);
  EXPECT_EQ(e[2].add, -inf);
  e.clear();
  top.logit_edits(ahead, 0, V, e);  // </think> ahead: the block is closed for this row
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].col, 5);
  EXPECT_EQ(e[1].col, kEnd);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (int step = 0; step < 60; ++step) {
    std::vector<float> row(V);
    for (float& v : row) v = u(rng);
    row[3] = row[11] = 5.0f;  // the stop ids would win while they are allowed
    row[kEnd] = step == 30 ? 9.0f : -3.0f;  // </think> comes at step 30
    e.clear();
    top.logit_edits({}, 0, V, e);
    std::vector<float> edited = row;
    for (const LogitEdit& x : e) edited[static_cast<size_t>(x.col)] = apply_logit_edit(edited[static_cast<size_t>(x.col)], x.add, x.scale, x.sub);
    std::vector<float> copy = row;
    const int32_t a = whole.sample(copy).id, b = top.sample_top(first_pairs(edited, 8)).id;
    ASSERT_EQ(a, b) << step;
    if (step < 30) EXPECT_TRUE(a != 3 && a != 11) << step;
  }
  EXPECT_FALSE(mask_top.open());
  SamplingParams g;
  g.greedy = true;
  ThinkStopMask gmask(stops, kEnd, nullptr);
  Sampler gs(g, 1, {});
  gs.set_constraint(&gmask);
  EXPECT_EQ(gs.candidates_needed(), 1);
  EXPECT_FALSE(gs.plain_greedy());
  EXPECT_THROW(gs.sample_top(first_pairs(std::vector<float>(V, -inf), 1)), Error);  // every token banned
  struct Rows final : LogitConstraint {  // a mask that is no set of bans
    void mask(std::span<float> logits) override { logits[0] = -INFINITY; }
    void accept(int32_t) override {}
  } rows;
  Sampler rs(p, 1, {});
  rs.set_constraint(&rows);
  EXPECT_EQ(rs.candidates_needed(), 0);
  EXPECT_THROW(rs.logit_edits({}, 0, V, e), Error);
}

// A sampler with logit_bias and penalties draws from the edited row's first pairs what it draws from the whole row
// (where the host applies the same processors), in plain steps and in verification blocks whose later rows were
// edited before the step as if the earlier drafts were committed (Sampler::logit_edits' `ahead`).
TEST(Sampling, EditedPairsDrawWhatTheWholeRowDraws) {
  const float inf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  constexpr int32_t V = 120;
  int cases = 0, accepted = 0;
  for (int32_t top_k : {1, 4, 20, 64})
    for (float temperature : {0.0f, 0.7f, 1.3f})
      for (int which = 0; which < 4; ++which) {
        SamplingParams p;
        p.top_k = top_k, p.temperature = temperature, p.top_p = which == 2 ? 0.9f : 1.0f;
        if (which == 0 || which == 3) p.logit_bias = {{2, 3.0f}, {5, -100.0f}, {6, -1.5f}, {17, 0.0f}};
        if (which >= 1) p.repetition_penalty = which == 1 ? 1.3f : 0.8f;
        if (which >= 2) p.presence_penalty = 0.4f, p.frequency_penalty = which == 3 ? -0.3f : 0.6f;
        std::vector<int32_t> prompt;
        for (int i = 0; i < 30; ++i) prompt.push_back(static_cast<int32_t>(rng() % V));
        Sampler whole(p, 123, prompt), top(p, 123, prompt);
        const auto edited_pairs = [&](const std::vector<float>& row, std::span<const int32_t> ahead) {
          std::vector<LogitEdit> e;
          top.logit_edits(ahead, 0, V, e);
          std::vector<float> r = row;
          for (const LogitEdit& x : e) r[static_cast<size_t>(x.col)] = apply_logit_edit(r[static_cast<size_t>(x.col)], x.add, x.scale, x.sub);
          return first_pairs(r, static_cast<size_t>(top.candidates_needed()));
        };
        const auto random_row = [&] {
          std::vector<float> row(V);
          for (float& v : row) v = std::round(u(rng) * 4) / 4;  // ties, zeros and signs for the repetition penalty
          row[static_cast<size_t>(rng() % V)] = -inf;          // a masked id
          return row;
        };
        for (int step = 0; step < 30; ++step) {
          if (step % 2 == 0) {
            const std::vector<float> row = random_row();
            std::vector<float> copy = row;
            const int32_t a = whole.sample(copy).id, b = top.sample_top(edited_pairs(row, {})).id;
            ASSERT_EQ(a, b) << "top_k " << top_k << " t " << temperature << " which " << which << " step " << step;
            ++cases;
            continue;
          }
          // A block of 3 drafts and 4 rows; every row's edits are made before any row is judged.
          std::vector<std::vector<float>> rows;
          std::vector<int32_t> drafts;
          for (int j = 0; j < 4; ++j) rows.push_back(random_row());
          for (int j = 0; j < 3; ++j) {  // often the raw row's best (accepted by greedy), sometimes repeated ids
            const auto best = std::max_element(rows[static_cast<size_t>(j)].begin(), rows[static_cast<size_t>(j)].end());
            drafts.push_back(j == 2 && step % 4 == 1 ? drafts[0]
                                                     : static_cast<int32_t>(best - rows[static_cast<size_t>(j)].begin()));
          }
          std::vector<std::vector<float>> pairs;
          for (size_t j = 0; j < 4; ++j) pairs.push_back(edited_pairs(rows[j], std::span(drafts).first(j)));
          for (size_t j = 0; j < 4; ++j) {
            std::vector<float> copy = rows[j];
            if (j == 3) {
              ASSERT_EQ(whole.sample(copy).id, top.sample_top(pairs[j]).id) << "block end, step " << step;
              break;
            }
            bool ok_whole = false, ok_top = false;
            const int32_t a = whole.verify(copy, drafts[j], ok_whole).id;
            const int32_t b = top.verify_top(pairs[j], drafts[j], ok_top).id;
            ASSERT_EQ(a, b) << "verify row " << j << ", top_k " << top_k << " t " << temperature << " which " << which
                            << " step " << step;
            ASSERT_EQ(ok_whole, ok_top);
            ++cases;
            if (!ok_whole) break;
            ++accepted;
          }
        }
      }
  EXPECT_GT(accepted, 200);  // blocks reach their later rows, whose edits counted the drafts before them
  EXPECT_GT(cases, 4 * 3 * 4 * 30);
}

}  // namespace
}  // namespace ninfer
