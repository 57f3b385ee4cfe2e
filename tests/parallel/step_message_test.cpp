// The messages rank 0 sends follower processes (engine/parallel/step_message.h): every field survives the bytes, and
// bytes that are not a message are refused with what is wrong.
#include <bit>
#include <cstring>
#include <limits>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "engine/backend/backend.h"
#include "engine/core/error.h"
#include "engine/parallel/step_message.h"

namespace ninfer {
namespace {

StepMessage sample() {
  static const std::vector<int32_t> tokens{5, 9, 11}, positions{7, 8, 0}, q_start{0, 2, 3}, seq_len{9, 1},
      slots{1, 0}, table{3, 4, 0, 6, 0, 0}, kv{50, 51, 96}, rows{1, 2}, checkpoints{-1, 4, -1};
  const ForwardBatch b{.tokens = tokens,
                       .positions = positions,
                       .q_start = q_start,
                       .seq_len = seq_len,
                       .state_slot = slots,
                       .block_table = table,
                       .max_blocks = 3,
                       .kv_slots = kv,
                       .logit_rows = rows,
                       .checkpoint_slot = checkpoints};
  return StepMessage::forward(b, {{StateOp::Kind::kZero, 2, 0}, {StateOp::Kind::kCopy, 7, 1}});
}

std::string error_of(const std::vector<char>& bytes) {
  try {
    decode_step(bytes);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
    return e.what();
  }
  return "";
}

TEST(StepMessage, AForwardStepSurvivesItsBytes) {
  const StepMessage m = sample();
  const StepMessage d = decode_step(encode_step(m));
  EXPECT_EQ(d.kind, StepMessage::Kind::kForward);
  EXPECT_EQ(d.state_ops, m.state_ops);
  EXPECT_EQ(d.logits, LogitsForm{});
  const ForwardBatch a = m.batch(), b = d.batch();
  EXPECT_EQ(b.max_blocks, 3);
  for (auto [x, y] : {std::pair{a.tokens, b.tokens}, {a.positions, b.positions}, {a.q_start, b.q_start},
                      {a.seq_len, b.seq_len}, {a.state_slot, b.state_slot}, {a.block_table, b.block_table},
                      {a.kv_slots, b.kv_slots}, {a.logit_rows, b.logit_rows}, {a.checkpoint_slot, b.checkpoint_slot}})
    EXPECT_EQ(std::vector<int32_t>(x.begin(), x.end()), std::vector<int32_t>(y.begin(), y.end()));
}

// What rank 0 asked of the logit rows (the rows, their argmax, their first top_k pairs): the followers must run the
// same collectives. Any other flag byte, a top_k outside [0, kTopKRowsMax] or a top_k beside the argmax is refused.
TEST(StepMessage, TheLogitsFormSurvivesAndAnyOtherIsRefused) {
  const ForwardBatch empty{};
  for (const LogitsForm form : {LogitsForm{}, LogitsForm{.argmax = true}, LogitsForm{.top_k = 1},
                                LogitsForm{.top_k = 20}, LogitsForm{.top_k = static_cast<int32_t>(kTopKRowsMax)}})
    EXPECT_EQ(decode_step(encode_step(StepMessage::forward(empty, {}, form))).logits, form);
  std::vector<char> bytes = encode_step(StepMessage::forward(empty, {}));
  // The flag is the byte after the kind, the two op counts and max_blocks; top_k the int32 after it.
  const size_t at = 4 + 2 + 1 + 4 + 4 + 4;
  ASSERT_EQ(bytes[at], 0);
  std::vector<char> flag = bytes;
  flag[at] = 2;
  EXPECT_NE(error_of(flag).find("argmax flag 2"), std::string::npos);
  const auto with_top_k = [&](int32_t k, bool argmax) {
    std::vector<char> b = bytes;
    b[at] = argmax ? 1 : 0;
    std::memcpy(b.data() + at + 1, &k, sizeof k);
    return error_of(b);
  };
  EXPECT_EQ(with_top_k(7, false), "");
  EXPECT_NE(with_top_k(-1, false).find("top_k -1"), std::string::npos);
  EXPECT_NE(with_top_k(static_cast<int32_t>(kTopKRowsMax) + 1, false).find("top_k 65"), std::string::npos);
  EXPECT_NE(with_top_k(3, true).find("top_k 3 with the argmax"), std::string::npos);
}

// The samplers' logit edits travel with the argmax or the top pairs, bit for bit (−0 and −inf included); edits with
// whole rows, out of order, twice on one element or past the step's logit rows are refused.
TEST(StepMessage, LogitEditsSurviveAndBadOnesAreRefused) {
  const std::vector<int32_t> rows = {0, 3};
  ForwardBatch b{};
  b.logit_rows = rows;
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<LogitEdit> edits = {{.row = 0, .col = 4, .add = -inf},
                                        {.row = 0, .col = 9, .scale = 1.5f, .sub = 0.25f},
                                        {.row = 1, .col = 2, .add = 2.0f}};
  for (const LogitsForm form : {LogitsForm{.argmax = true}, LogitsForm{.top_k = 20}}) {
    const StepMessage m = decode_step(encode_step(StepMessage::forward(b, {}, form, edits)));
    ASSERT_EQ(m.edits.size(), edits.size());
    for (size_t i = 0; i < edits.size(); ++i) {
      EXPECT_EQ(m.edits[i].row, edits[i].row);
      EXPECT_EQ(m.edits[i].col, edits[i].col);
      EXPECT_EQ(std::bit_cast<uint32_t>(m.edits[i].add), std::bit_cast<uint32_t>(edits[i].add));
      EXPECT_EQ(m.edits[i].scale, edits[i].scale);
      EXPECT_EQ(m.edits[i].sub, edits[i].sub);
    }
  }
  const auto refused = [&](LogitsForm form, std::vector<LogitEdit> e) {
    return error_of(encode_step(StepMessage::forward(b, {}, form, e)));
  };
  EXPECT_NE(refused({}, edits).find("3 logit edits with whole rows"), std::string::npos);
  EXPECT_NE(refused({.top_k = 5}, {edits[1], edits[0]}).find("does not follow"), std::string::npos);
  EXPECT_NE(refused({.top_k = 5}, {edits[0], edits[0]}).find("does not follow"), std::string::npos);
  EXPECT_NE(refused({.argmax = true}, {{.row = 2, .col = 0}}).find("outside"), std::string::npos);
  EXPECT_NE(refused({.argmax = true}, {{.row = 0, .col = -3}}).find("outside"), std::string::npos);
}

// The step_message fuzz target's seeds (tests/fuzz/corpus/step_message) are messages of this build's version: each
// decodes, so the fuzzer starts past the version check (a version bump must rewrite them).
TEST(StepMessage, TheFuzzSeedsAreMessagesOfThisVersion) {
  const std::filesystem::path dir = std::filesystem::path(NINFER_SOURCE_ROOT) / "tests/fuzz/corpus/step_message";
  int steps = 0, setups = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(entry.path().filename().string());
    if (entry.path().filename() == "setup.bin") {
      EXPECT_EQ(decode_setup(bytes).tp, 2);
      ++setups;
      continue;
    }
    const StepMessage m = decode_step(bytes);
    EXPECT_EQ(encode_step(m), bytes);
    ++steps;
  }
  EXPECT_EQ(steps, 8);
  EXPECT_EQ(setups, 1);
}

TEST(StepMessage, StopAndEmptyCheckpointsSurvive) {
  StepMessage stop = StepMessage::stop();
  stop.state_ops.push_back({StateOp::Kind::kCopy, 1, 2});
  const StepMessage d = decode_step(encode_step(stop));
  EXPECT_EQ(d.kind, StepMessage::Kind::kStop);
  EXPECT_EQ(d.state_ops, stop.state_ops);
  const StepMessage plain = StepMessage::forward(ForwardBatch{}, {});
  EXPECT_TRUE(decode_step(encode_step(plain)).batch().checkpoint_slot.empty());
}

TEST(StepMessage, BytesThatAreNotAMessageAreRefused) {
  std::vector<char> bytes = encode_step(sample());
  EXPECT_NE(error_of({bytes.begin(), bytes.begin() + 20}).find("bytes at offset"), std::string::npos);
  std::vector<char> longer = bytes;
  longer.push_back(0);
  EXPECT_NE(error_of(longer).find("1 trailing bytes"), std::string::npos);
  std::vector<char> magic = bytes;
  magic[0] = 'X';
  EXPECT_NE(error_of(magic).find("magic"), std::string::npos);
  std::vector<char> version = bytes;
  version[4] = 9;
  EXPECT_NE(error_of(version).find("version 9"), std::string::npos);
  for (size_t cut = 0; cut < bytes.size(); ++cut) EXPECT_FALSE(error_of({bytes.begin(), bytes.begin() + cut}).empty());
}

TEST(StepMessage, DrafterCallsSurviveTheirBytes) {
  DrafterRecipe recipe{.method = "mtp", .lm_head_draft = true};
  recipe.mtp.hidden = MtpHidden::kPreFinalNorm;
  recipe.mtp.recursion = MtpRecursion::kBeforeNorm;
  recipe.mtp.kv_block_size = 32;
  recipe.mtp.lm_head_draft = true;
  StepMessage build = StepMessage::draft_build(recipe, {.max_sequences = 4, .max_context = 70000, .draft_tokens = 3});
  build.drafter_ops = {{DrafterOp::Kind::kAdd, 7}, {DrafterOp::Kind::kRelease, int64_t{1} << 40}};
  build.state_ops = {{StateOp::Kind::kZero, 3, 0}};
  const StepMessage b = decode_step(encode_step(build));
  EXPECT_EQ(b.kind, StepMessage::Kind::kDraftBuild);
  EXPECT_EQ(b.recipe, recipe);
  EXPECT_EQ(b.limits.max_sequences, 4);
  EXPECT_EQ(b.limits.max_context, 70000);
  EXPECT_EQ(b.limits.draft_tokens, 3);
  EXPECT_EQ(b.drafter_ops, build.drafter_ops);
  EXPECT_EQ(b.state_ops, build.state_ops);

  // Two sequences' rows, width 2: sequence 5 has 2 rows from position 10, sequence 9 one row from 0.
  const std::vector<int32_t> next5{11, 12}, next9{4};
  const std::vector<float> feat5{0.5f, -1.f, 2.f, 3.25f}, feat9{-0.f, 1e-30f};
  const std::vector<DraftRows> rows{{.seq = 5, .start = 10, .next_tokens = next5, .features = feat5},
                                    {.seq = 9, .start = 0, .next_tokens = next9, .features = feat9}};
  const StepMessage o = decode_step(encode_step(StepMessage::draft_observe(rows)));
  EXPECT_EQ(o.kind, StepMessage::Kind::kDraftObserve);
  const std::vector<DraftRows> got = o.draft_rows(2);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got[i].seq, rows[i].seq);
    EXPECT_EQ(got[i].start, rows[i].start);
    EXPECT_EQ(std::vector<int32_t>(got[i].next_tokens.begin(), got[i].next_tokens.end()),
              std::vector<int32_t>(rows[i].next_tokens.begin(), rows[i].next_tokens.end()));
    EXPECT_EQ(std::vector<float>(got[i].features.begin(), got[i].features.end()),
              std::vector<float>(rows[i].features.begin(), rows[i].features.end()));
  }
  // Rows whose features do not match their count are refused, naming the mismatch.
  try {
    o.draft_rows(3);
    ADD_FAILURE() << "features of width 3 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("feature"), std::string::npos) << e.what();
  }

  const std::vector<SeqId> seqs{5, 9};
  const StepMessage p = decode_step(encode_step(StepMessage::draft_propose(seqs, 3)));
  EXPECT_EQ(p.kind, StepMessage::Kind::kDraftPropose);
  EXPECT_EQ(p.propose_seqs, std::vector<int64_t>(seqs.begin(), seqs.end()));
  EXPECT_EQ(p.propose_k, 3);

  // Every cut of a drafter message is refused.
  for (const StepMessage& m : {build, StepMessage::draft_observe(rows)}) {
    const std::vector<char> bytes = encode_step(m);
    for (size_t cut = 0; cut < bytes.size(); ++cut) EXPECT_FALSE(error_of({bytes.begin(), bytes.begin() + cut}).empty());
  }
}

TEST(GroupSetup, SurvivesItsBytes) {
  const GroupSetup g{.tp = 2, .kv_block_size = 16, .kv_blocks = 4096, .kv_dtype = 3, .state_slots = 4,
                     .state_checkpoints = 3, .state_extra_rows = 9, .nvfp4_activations = 1, .bf16_activations = 1, .backend = 2, .artifact_bytes = 123456789,
                     .hidden_size = 5120, .num_layers = 64, .vocab_size = 248320};
  EXPECT_EQ(decode_setup(encode_setup(g)), g);
  std::vector<char> bytes = encode_setup(g);
  bytes.pop_back();
  EXPECT_THROW(decode_setup(bytes), Error);
}

}  // namespace
}  // namespace ninfer
