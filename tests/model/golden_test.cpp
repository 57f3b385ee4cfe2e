// The CPU engine against transformers: logits, greedy continuations, chunked prefill, batching.
#include <cstdio>

#include <gtest/gtest.h>

#include "tests/model/reference_model.h"

namespace ninfer {
namespace {

using testing::ReferenceModel;

struct Prompt {
  std::vector<int32_t> tokens;
  std::vector<float> logits;
};

std::vector<Prompt> prompts_of(const std::string& model) {
  auto index = testing::reference_index();
  std::vector<Prompt> out;
  for (const auto& p : index["models"][model]["prompts"]) out.push_back({testing::read_i32(p["tokens"]), testing::read_f32(p["logits"])});
  return out;
}

// All-position logits of a whole prompt in one uncached forward, as the fixture recorded them.
std::vector<float> prefill_all(ReferenceModel& m, const std::vector<int32_t>& tokens, SeqId id, int64_t chunk) {
  int32_t slot = m.state->acquire();
  std::vector<float> all;
  for (int64_t start = 0; start < static_cast<int64_t>(tokens.size()); start += chunk) {
    int64_t n = std::min<int64_t>(chunk, static_cast<int64_t>(tokens.size()) - start);
    SequenceStep s{id, slot, start, std::span(tokens).subspan(static_cast<size_t>(start), static_cast<size_t>(n)), true};
    auto logits = m.runner->step(std::span(&s, 1));
    all.insert(all.end(), logits.begin(), logits.end());
  }
  m.kv->release(id);
  m.state->release(slot);
  return all;
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, LogitsMatchTransformersInF32) {
  ReferenceModel m(GetParam());
  auto prompts = prompts_of(GetParam());
  ASSERT_GE(prompts.size(), 4u);
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto got = prefill_all(m, prompts[i].tokens, static_cast<SeqId>(i), 1 << 20);
    double err = testing::rel_err(got, prompts[i].logits);
    EXPECT_LE(err, 1e-4) << GetParam() << " prompt " << i << " (" << prompts[i].tokens.size() << " tokens)";
  }
}

TEST_P(Golden, ChunkedPrefillEqualsUnchunked) {
  ReferenceModel m(GetParam());
  auto prompts = prompts_of(GetParam());
  const auto& longest = prompts.back();  // 333 tokens: crosses the 64-token delta-rule chunks
  auto whole = prefill_all(m, longest.tokens, 1, 1 << 20);
  for (int64_t chunk : {1, 7, 16, 63, 64, 65, 100}) {
    auto got = prefill_all(m, longest.tokens, 2, chunk);
    EXPECT_LE(testing::rel_err(got, whole), 1e-5) << "chunk " << chunk;
    EXPECT_LE(testing::rel_err(got, longest.logits), 1e-4) << "chunk " << chunk;
  }
}

TEST_P(Golden, GreedyContinuationsAreIdentical) {
  ReferenceModel m(GetParam());
  auto index = testing::reference_index();
  auto prompts = prompts_of(GetParam());
  for (const auto& g : index["models"][GetParam()]["greedy"]) {
    const auto& prompt = prompts[g["prompt_index"].get<size_t>()].tokens;
    auto want = testing::read_i32(g["tokens"]);
    int32_t slot = m.state->acquire();
    SequenceStep s{7, slot, 0, prompt, false};
    auto logits = m.runner->step(std::span(&s, 1));
    std::vector<int32_t> got;
    int64_t pos = static_cast<int64_t>(prompt.size());
    for (size_t t = 0; t < want.size(); ++t) {
      int32_t next = ReferenceModel::argmax(logits);
      got.push_back(next);
      SequenceStep d{7, slot, pos++, std::span(&got.back(), 1), false};
      logits = m.runner->step(std::span(&d, 1));
    }
    EXPECT_EQ(got, want) << GetParam() << " prompt " << g["prompt_index"];
    m.kv->release(7);
    m.state->release(slot);
  }
}

TEST_P(Golden, BatchedWithAPrefillEqualsOneAtATime) {
  ReferenceModel m(GetParam());
  auto prompts = prompts_of(GetParam());
  // Sequences A and B decode while C's prompt is prefilled in the same step.
  const auto& pa = prompts[1].tokens;
  const auto& pb = prompts[2].tokens;
  const auto& pc = prompts[3].tokens;
  auto alone_a = prefill_all(m, pa, 10, 1 << 20);
  auto alone_b = prefill_all(m, pb, 11, 1 << 20);
  auto alone_c = prefill_all(m, pc, 12, 1 << 20);
  const int64_t V = m.config.vocab_size;

  int32_t sa = m.state->acquire(), sb = m.state->acquire(), sc = m.state->acquire();
  // Prefill all but the last token of A and B.
  std::vector<SequenceStep> first{{20, sa, 0, std::span(pa).first(pa.size() - 1), false},
                                  {21, sb, 0, std::span(pb).first(pb.size() - 1), false}};
  m.runner->step(first);
  std::vector<SequenceStep> mixed{{20, sa, static_cast<int64_t>(pa.size() - 1), std::span(pa).last(1), false},
                                  {22, sc, 0, pc, true},
                                  {21, sb, static_cast<int64_t>(pb.size() - 1), std::span(pb).last(1), false}};
  auto got = m.runner->step(mixed);
  ASSERT_EQ(got.size(), static_cast<size_t>((2 + pc.size()) * V));
  EXPECT_LE(testing::rel_err(got.subspan(0, V), std::span(alone_a).last(V)), 1e-5);
  EXPECT_LE(testing::rel_err(got.subspan(V, pc.size() * V), alone_c), 1e-5);
  EXPECT_LE(testing::rel_err(got.subspan((1 + pc.size()) * V, V), std::span(alone_b).last(V)), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Reference, Golden, ::testing::Values("qwen35_tied", "qwen35_untied", "qwen3_dense"));

TEST(GoldenBf16, Bf16WeightsMatchExactBf16LogitsAndStayNearF32) {
  ReferenceModel m("qwen35_untied_bf16");
  auto index = testing::reference_index();
  auto f32_prompts = prompts_of("qwen35_untied");
  size_t i = 0;
  for (const auto& p : index["models"]["qwen35_untied_bf16"]["prompts"]) {
    auto tokens = testing::read_i32(p["tokens"]);
    auto want = testing::read_f32(p["logits"]);
    auto got = prefill_all(m, tokens, static_cast<SeqId>(i), 1 << 20);
    EXPECT_LE(testing::rel_err(got, want), 1e-4) << "prompt " << i << " vs exact bf16-weight logits";
    EXPECT_LE(testing::rel_err(got, f32_prompts[i].logits), 2e-2) << "prompt " << i << " vs f32 weights";
    ++i;
  }
  EXPECT_GE(i, 4u);
}

// --dense-activations bf16 (CpuBackendOptions::bf16_activations) rounds every bf16 linear's input to bf16: the
// logits move off the exact bf16-weight ones (so the rounding happened) but stay within the bound bf16 KV gets
// against f32 (GoldenKvDtype below).
TEST(GoldenBf16, Bf16ActivationsStayNearTheExactLogits) {
  ReferenceModel m("qwen35_untied_bf16", DType::kF32, 2, BackendKind::kCpu, /*bf16_activations=*/true);
  auto index = testing::reference_index();
  size_t i = 0;
  for (const auto& p : index["models"]["qwen35_untied_bf16"]["prompts"]) {
    auto tokens = testing::read_i32(p["tokens"]);
    auto want = testing::read_f32(p["logits"]);
    auto got = prefill_all(m, tokens, static_cast<SeqId>(i), 1 << 20);
    const double err = testing::rel_err(got, want);
    std::printf("prompt %zu: bf16 activations, rel_err %.3g against the exact logits\n", i, err);
    EXPECT_LE(err, 2e-2) << "prompt " << i << " vs exact bf16-weight logits";
    EXPECT_GT(err, 1e-4) << "prompt " << i << ": as exact as f32 activations; were they rounded?";
    ++i;
  }
  EXPECT_GE(i, 4u);
}

}  // namespace
}  // namespace ninfer

namespace ninfer {
namespace {

TEST(GoldenKvDtype, Bf16AndF16KvStayNearTheF32Logits) {
  auto prompts = prompts_of("qwen35_untied");
  for (DType kv : {DType::kBF16, DType::kF16}) {
    ReferenceModel m("qwen35_untied", kv);
    for (size_t i = 0; i < prompts.size(); ++i) {
      auto got = prefill_all(m, prompts[i].tokens, static_cast<SeqId>(i), 16);
      EXPECT_LE(testing::rel_err(got, prompts[i].logits), 2e-2) << dtype_name(kv) << " KV, prompt " << i;
    }
  }
}

}  // namespace
}  // namespace ninfer
