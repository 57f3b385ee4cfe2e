// The paged-attention work plan (kernels/attention/attention_plan.h) run on the host: the same function the CUDA
// plan kernel runs. Over random step shapes it must stay within the bounds the launches are sized by, and its items
// must cover every query vector's keys exactly once.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "kernels/attention/attention_plan.h"

namespace ninfer::kern {
namespace {

struct Step {
  AttnPlanShape shape;
  std::vector<int32_t> q_start, seq_len;
};

Step random_step(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Step st;
  AttnPlanShape& p = st.shape;
  p.S = pick(1, 12);
  p.G = std::vector<int>{1, 2, 3, 4, 6, 8}[static_cast<size_t>(pick(0, 5))];
  p.M = 1 << pick(0, 5);
  p.n_kv = pick(1, 8);
  p.target = pick(1, 1200);
  p.min_split = std::vector<int>{64, 256}[static_cast<size_t>(pick(0, 1))];
  st.q_start.push_back(0);
  const bool decode = pick(0, 1) == 0;
  for (int s = 0; s < p.S; ++s) {
    const int n_new = decode ? pick(0, 1) == 0 ? 1 : 4 : pick(0, 40);
    st.q_start.push_back(st.q_start.back() + n_new);
    st.seq_len.push_back(n_new + (pick(0, 3) == 0 ? 0 : pick(0, 20000)));
  }
  return st;
}

TEST(AttentionPlan, StaysWithinItsBoundsAndCoversEveryKeyOnce) {
  std::mt19937 rng(7);
  int split_steps = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const Step st = random_step(rng);
    const AttnPlanShape& p = st.shape;
    const int64_t tiles = attention_plan_tiles(st.q_start.data(), p);
    const AttnPlanCounts cap = attention_plan_bounds(tiles, p);
    std::vector<int32_t> items(static_cast<size_t>(cap.items) * kAttnItemInts, -7);
    std::vector<int32_t> combine(static_cast<size_t>(cap.combine) * kAttnCombineInts, -7);
    const AttnPlanCounts n = attention_plan(st.q_start.data(), st.seq_len.data(), p, cap, items.data(), combine.data());
    ASSERT_LE(n.items, cap.items) << "trial " << trial;
    ASSERT_LE(n.combine, cap.combine) << "trial " << trial;
    ASSERT_LE(n.slots, cap.slots) << "trial " << trial;
    if (n.combine > 0) ++split_steps;

    // Per tile (s, v0): the key ranges its items take, and the partial slots of split ones.
    std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> ranges;
    std::map<std::pair<int, int>, std::vector<int>> parts;
    std::set<int> slots_seen;
    for (int i = 0; i < n.items; ++i) {
      const int32_t* it = &items[static_cast<size_t>(i) * kAttnItemInts];
      const int s = it[0], v0 = it[1], nv = it[2], kb = it[3], ke = it[4], part = it[5], pos0 = it[6], row0 = it[7];
      ASSERT_GE(s, 0);
      ASSERT_LT(s, p.S);
      const int n_new = st.q_start[static_cast<size_t>(s) + 1] - st.q_start[static_cast<size_t>(s)];
      EXPECT_EQ(row0, st.q_start[static_cast<size_t>(s)]);
      EXPECT_EQ(pos0, st.seq_len[static_cast<size_t>(s)] - n_new);
      EXPECT_EQ(v0 % p.M, 0);
      EXPECT_EQ(nv, std::min(p.M, n_new * p.G - v0));
      EXPECT_LT(kb, ke);
      ranges[{s, v0}].push_back({kb, ke});
      if (part >= 0) {
        EXPECT_TRUE(slots_seen.insert(part).second) << "slot " << part << " written twice";
        parts[{s, v0}].push_back(part);
      }
    }
    int64_t tiles_seen = 0;
    for (int s = 0; s < p.S; ++s) {
      const int n_new = st.q_start[static_cast<size_t>(s) + 1] - st.q_start[static_cast<size_t>(s)];
      const int pos0 = st.seq_len[static_cast<size_t>(s)] - n_new;
      for (int v0 = 0; v0 < n_new * p.G; v0 += p.M, ++tiles_seen) {
        const int nv = std::min(p.M, n_new * p.G - v0);
        const int key_end = pos0 + (v0 + nv - 1) / p.G + 1;
        auto r = ranges[std::make_pair(s, v0)];
        ASSERT_FALSE(r.empty()) << "tile (" << s << ", " << v0 << ") has no item";
        std::sort(r.begin(), r.end());
        int at = 0;
        for (auto [kb, ke] : r) {
          EXPECT_EQ(kb, at) << "keys of tile (" << s << ", " << v0 << ") not covered once";
          at = ke;
        }
        EXPECT_EQ(at, key_end);
        const size_t split_parts = parts[std::make_pair(s, v0)].size();
        EXPECT_EQ(split_parts, r.size() > 1 ? r.size() : 0u);
      }
    }
    EXPECT_EQ(tiles_seen, tiles);
    // Combine entries name the split tiles' consecutive slots.
    for (int c = 0; c < n.combine; ++c) {
      const int32_t* e = &combine[static_cast<size_t>(c) * kAttnCombineInts];
      const int v0 = e[0], part0 = e[2], ns = e[3], row0 = e[4];
      const auto s = static_cast<int>(std::upper_bound(st.q_start.begin(), st.q_start.end(), row0) - st.q_start.begin() - 1);
      std::vector<int> got = parts[std::make_pair(s, v0)];
      std::sort(got.begin(), got.end());
      ASSERT_EQ(static_cast<int>(got.size()), ns);
      for (int i = 0; i < ns; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], part0 + i);
    }
  }
  EXPECT_GT(split_steps, 300) << "the random shapes should split often";
}

// Split ranges are multiples of kAttnSplitAlign keys, at least min_split, sized so one wave of `target` CTAs is
// filled: a decode step of one 32k-token sequence over 4 kv heads on 132 SMs × 2 splits into ~66 ranges of 512.
TEST(AttentionPlan, DecodeOfOneLongSequenceFillsAWave) {
  AttnPlanShape p;
  p.S = 1, p.G = 6, p.M = 8, p.n_kv = 4, p.target = 264, p.min_split = 256;
  const std::vector<int32_t> q_start = {0, 1}, seq_len = {32768};
  const AttnPlanCounts cap = attention_plan_bounds(attention_plan_tiles(q_start.data(), p), p);
  std::vector<int32_t> items(static_cast<size_t>(cap.items) * kAttnItemInts), combine(static_cast<size_t>(cap.combine) * kAttnCombineInts);
  const AttnPlanCounts n = attention_plan(q_start.data(), seq_len.data(), p, cap, items.data(), combine.data());
  // per = ceil(32768 · 4 / 264) = 497 → 512-key ranges → 64 items.
  EXPECT_EQ(n.items, 64);
  EXPECT_EQ(n.combine, 1);
  EXPECT_EQ(n.slots, 64);
  EXPECT_EQ(items[3], 0);
  EXPECT_EQ(items[4], 512);
}

}  // namespace
}  // namespace ninfer::kern
