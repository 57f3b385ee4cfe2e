// Rank 0's GDN state operations reach every rank under TP: a checkpoint taken with copy_slot and restored after more
// tokens gives the same logits again (a follower whose state was not restored would not), as at TP1; and a slot
// acquired again starts from zero on every rank. On ninfer-tiny at TP2 and the qwen35_tied reference fixture at TP4
// (replicated KV and GDN key heads).
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "tests/model/reference_model.h"
#include "tests/parallel/tp_model.h"

namespace ninfer {
namespace {

const std::string kTiny = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";

std::vector<float> step(testing::TpModel& m, SeqId id, int32_t slot, int64_t start, std::span<const int32_t> tokens) {
  const SequenceStep s{id, slot, start, tokens, false};
  const auto logits = m.runner->step(std::span(&s, 1));
  return {logits.begin(), logits.end()};
}

// Logits of: the prompt; one token after a checkpoint; the same token after more tokens and a restore; the prompt
// again in a slot acquired anew.
std::vector<std::vector<float>> checkpoint_restore(const Artifact& a, int tp) {
  testing::TpModel m(a, tp, Nvfp4Activations::kNvfp4, DType::kF32, 1, /*checkpoints=*/1);
  const auto prompt = testing::random_tokens(40, m.config.vocab_size, 3);
  const auto more = testing::random_tokens(9, m.config.vocab_size, 4);
  const std::vector<int32_t> next{17};
  std::vector<std::vector<float>> out;
  int32_t slot = m.acquire();
  out.push_back(step(m, 1, slot, 0, prompt));
  const int32_t ckpt = m.state->checkpoint_slot(slot, 0);
  m.state->copy_slot(ckpt, slot);
  out.push_back(step(m, 1, slot, 40, next));
  step(m, 1, slot, 41, more);
  m.kv->truncate(1, 40);
  m.state->copy_slot(slot, ckpt);
  out.push_back(step(m, 1, slot, 40, next));
  m.release(1, slot);
  slot = m.acquire();  // the same row, dirty on every rank until acquire() zeroes it everywhere
  out.push_back(step(m, 2, slot, 0, prompt));
  m.release(2, slot);
  return out;
}

void expect_mirrored(const Artifact& a, int tp) {
  const auto one = checkpoint_restore(a, 1);
  const auto many = checkpoint_restore(a, tp);
  EXPECT_EQ(many[2], many[1]) << "tp " << tp << ": the restored state differs on some rank";
  EXPECT_EQ(many[3], many[0]) << "tp " << tp << ": a reacquired slot is not zero on some rank";
  EXPECT_EQ(one[2], one[1]);
  for (size_t i = 0; i < one.size(); ++i) {
    float worst = 0, scale = 0;
    for (size_t j = 0; j < one[i].size(); ++j)
      worst = std::max(worst, std::abs(many[i][j] - one[i][j])), scale = std::max(scale, std::abs(one[i][j]));
    EXPECT_LE(worst, 1e-5f * scale) << "tp " << tp << ", step " << i;
  }
}

TEST(TpStateMirror, CheckpointRestoreAndReacquireReachEveryRank) {
  expect_mirrored(Artifact::open(kTiny), 2);
  testing::ReferenceModel ref("qwen35_tied");
  expect_mirrored(*ref.artifact, 4);
}

TEST(TpStateMirror, MirrorWithOtherRowsIsRefused) {
  auto backend = make_backend({.kind = BackendKind::kCpu, .threads = 1});
  const Artifact a = Artifact::open(kTiny);
  testing::TpModel m(a, 1);
  LinearStateCache leader(*backend, m.config, 2, 1), other(*backend, m.config, 2, 2);
  EXPECT_THROW(leader.mirror_to(other), Error);
}

}  // namespace
}  // namespace ninfer
