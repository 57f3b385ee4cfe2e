// Tests ThinkStopMask: stop ids ruled out while the think block is open, nothing after </think>, the inner constraint
// always consulted.
#include "engine/constrain/think_stop_mask.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace ninfer {
namespace {

// Records what reaches it and masks id 0.
class Recorder final : public LogitConstraint {
 public:
  void start(int64_t n) override { started = n; }
  void mask(std::span<float> logits) override {
    ++masks;
    logits[0] = -INFINITY;
  }
  void accept(int32_t id) override { accepted.push_back(id); }
  int64_t started = -1;
  int masks = 0;
  std::vector<int32_t> accepted;
};

TEST(ThinkStopMask, StopIdsAreRuledOutUntilTheThinkBlockCloses) {
  auto inner = std::make_shared<Recorder>();
  const int32_t end_think = 5;
  ThinkStopMask m({7, 9}, end_think, inner);
  m.start(40);
  EXPECT_EQ(inner->started, 40);
  std::vector<float> row(10, 1.0f);
  m.mask(row);
  EXPECT_TRUE(m.open());
  for (int32_t id = 0; id < 10; ++id)
    EXPECT_EQ(std::isinf(row[static_cast<size_t>(id)]), id == 0 || id == 7 || id == 9) << id;
  m.accept(3);
  EXPECT_TRUE(m.open());
  m.accept(end_think);  // sampled or forced by the reasoning budget: the answer may end from here on
  EXPECT_FALSE(m.open());
  row.assign(10, 1.0f);
  m.mask(row);
  for (int32_t id = 0; id < 10; ++id) EXPECT_EQ(std::isinf(row[static_cast<size_t>(id)]), id == 0) << id;
  EXPECT_EQ(inner->masks, 2);
  EXPECT_EQ(inner->accepted, (std::vector<int32_t>{3, end_think}));
}

TEST(ThinkStopMask, WorksWithoutAnInnerConstraintAndIgnoresIdsPastTheRow) {
  ThinkStopMask m({2, 100}, 1, nullptr);
  m.start(8);
  std::vector<float> row(4, 0.5f);
  m.mask(row);
  EXPECT_EQ(row, (std::vector<float>{0.5f, 0.5f, -INFINITY, 0.5f}));
  m.accept(1);
  row.assign(4, 0.5f);
  m.mask(row);
  EXPECT_EQ(row, (std::vector<float>(4, 0.5f)));
}

// Alone, its mask is the stop ids while the block is open: a set of banned ids the sampler can apply as logit edits,
// also with tokens `ahead` (a verification block's drafts: </think> among them closes the block for what follows).
// With an inner constraint it is no such set.
TEST(ThinkStopMask, BannedIdsAreTheStopIdsWhileOpen) {
  ThinkStopMask m({2, 100}, 1, nullptr);
  std::vector<int32_t> ids;
  ASSERT_TRUE(m.banned_ids({}, ids));
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 100}));
  const std::vector<int32_t> closing = {3, 1, 4};
  ids.clear();
  ASSERT_TRUE(m.banned_ids(closing, ids));
  EXPECT_TRUE(ids.empty());
  EXPECT_TRUE(m.open());  // asking changes nothing
  m.accept(1);
  ASSERT_TRUE(m.banned_ids({}, ids));
  EXPECT_TRUE(ids.empty());
  ThinkStopMask wrapped({2}, 1, std::make_shared<Recorder>());
  EXPECT_FALSE(wrapped.banned_ids({}, ids));
}

}  // namespace
}  // namespace ninfer
