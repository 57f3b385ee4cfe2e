// Rollback leaves no trace: after a verification block with rejected drafts, KV truncation and the GDN checkpoint
// restore, the next step's logits equal plain decoding's; without the restore they do not (the test can fail).
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/runtime/memory_plan.h"
#include "tests/spec/spec_test_util.h"

namespace ninfer::testing {
namespace {

class Rollback : public ::testing::TestWithParam<std::string> {};

TEST_P(Rollback, NextLogitsEqualPlainDecode) {
  ReferenceModel m(GetParam());
  const auto V = static_cast<size_t>(m.config.vocab_size);
  const auto prompt = read_i32(reference_index()["models"][GetParam()]["prompts"][2]["tokens"]);
  const int64_t n = static_cast<int64_t>(prompt.size());
  constexpr int32_t kDrafts = 3;
  LinearStateCache state(*m.backend, m.config, 3, kDrafts + 1);
  ModelRunner runner(*m.model, *m.kv, state);

  // Plain: prompt, x1, x2.
  const int32_t plain_slot = state.acquire();
  auto last_row = [&](std::span<const float> l) { return std::vector<float>(l.end() - static_cast<std::ptrdiff_t>(V), l.end()); };
  SequenceStep s0{1, plain_slot, 0, prompt};
  const int32_t x1 = ReferenceModel::argmax(last_row(runner.step(std::span(&s0, 1))));
  const std::vector<int32_t> t1{x1};
  SequenceStep s1{1, plain_slot, n, t1};
  const std::vector<float> plain_l1 = last_row(runner.step(std::span(&s1, 1)));
  const int32_t x2 = ReferenceModel::argmax(plain_l1);
  const std::vector<int32_t> t2{x2};
  SequenceStep s2{1, plain_slot, n + 1, t2};
  const std::vector<float> plain_l2 = last_row(runner.step(std::span(&s2, 1)));

  // Speculative: prompt, then the block [x1, wrong, wrong, wrong]; only row 0 is committed (x2 replaces the first
  // draft), so KV keeps n + 1 tokens and the GDN state is row 0's checkpoint. Then x2 as a plain step.
  // restore: 0 none, 1 copy checkpoint 0 into the live row, 2 adopt checkpoint 0 as the live row (what the engine does).
  auto speculate = [&](SeqId id, int restore) {
    const int32_t slot = state.acquire();
    SequenceStep p{id, state.row(slot), 0, prompt};
    runner.step(std::span(&p, 1));
    const std::vector<int32_t> block{x1, (x2 + 1) % int32_t(V), 7, 11};
    std::vector<int32_t> ck;
    for (int32_t j = 0; j <= kDrafts; ++j) ck.push_back(state.checkpoint_slot(slot, j));
    SequenceStep v{id, state.row(slot), n, block, true, ck};
    const auto logits = runner.step(std::span(&v, 1));
    EXPECT_EQ(logits.size(), V * block.size());
    EXPECT_LE(rel_err(std::vector<float>(logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(V)), plain_l1), 1e-5);
    m.kv->truncate(id, n + 1);
    if (restore == 1) state.copy_slot(state.row(slot), ck[0]);
    if (restore == 2) state.adopt_checkpoint(slot, 0);
    SequenceStep next{id, state.row(slot), n + 1, t2};
    auto out = last_row(runner.step(std::span(&next, 1)));
    state.release(slot);
    return out;
  };
  for (int restore : {1, 2}) {
    const std::vector<float> restored = speculate(2 + restore, restore);
    EXPECT_LE(rel_err(restored, plain_l2), 1e-5) << GetParam() << " restore " << restore;
    EXPECT_EQ(ReferenceModel::argmax(restored), ReferenceModel::argmax(plain_l2)) << "restore " << restore;
  }
  if (m.config.num_linear_attention_layers() > 0) {
    // The negative control: the state after the rejected rows is visibly wrong.
    const std::vector<float> stale = speculate(5, 0);
    EXPECT_GT(rel_err(stale, plain_l2), 1e-3) << GetParam();
  }
}

// Adopting a checkpoint swaps the slot's live row with that checkpoint's row and touches no other slot; the rows of
// a slot stay its own however often it adopts.
TEST(Rollback, AdoptCheckpointSwapsRowsWithinTheSlot) {
  ReferenceModel m("qwen35_tied");
  LinearStateCache state(*m.backend, m.config, 3, 2);
  auto rows_of = [&](int32_t slot) {
    std::vector<int32_t> r{state.row(slot)};
    for (int64_t j = 0; j < 2; ++j) r.push_back(state.checkpoint_slot(slot, j));
    return r;
  };
  EXPECT_EQ(rows_of(1), (std::vector<int32_t>{1, 3 + 2, 3 + 3}));
  const auto slot0 = rows_of(0), slot2 = rows_of(2);
  state.adopt_checkpoint(1, 1);
  EXPECT_EQ(rows_of(1), (std::vector<int32_t>{3 + 3, 3 + 2, 1}));
  state.adopt_checkpoint(1, 0);
  EXPECT_EQ(rows_of(1), (std::vector<int32_t>{3 + 2, 3 + 3, 1}));
  EXPECT_EQ(rows_of(0), slot0);
  EXPECT_EQ(rows_of(2), slot2);
  EXPECT_THROW(state.adopt_checkpoint(1, 2), Error);
  EXPECT_THROW(state.adopt_checkpoint(3, 0), Error);
}

// The memory plan counts the K checkpoint slots per sequence, and the engine allocates exactly that.
TEST(Rollback, MemoryPlanCountsCheckpointSlots) {
  ReferenceModel m("qwen35_tied");
  MemoryPlanInput in{.max_context = 128, .max_concurrency = 3};
  const MemoryPlan plain = plan_memory(m.config, in);
  in.draft_tokens = 4;
  const MemoryPlan spec = plan_memory(m.config, in);
  EXPECT_GT(plain.state_bytes, 0u);
  EXPECT_EQ(spec.state_bytes, 5 * plain.state_bytes);
  EXPECT_EQ(spec.kv_bytes, plain.kv_bytes);
  LinearStateCache state(*m.backend, m.config, 3, 4);
  EXPECT_EQ(state.checkpoint_slot(2, 3), 3 + 2 * 4 + 3);
  EXPECT_EQ(state.max_slots(), 3);
  EXPECT_EQ(state.checkpoints_per_slot(), 4);
}

INSTANTIATE_TEST_SUITE_P(Models, Rollback, ::testing::Values("qwen35_tied", "qwen35_untied_bf16", "qwen3_dense"));

}  // namespace
}  // namespace ninfer::testing
