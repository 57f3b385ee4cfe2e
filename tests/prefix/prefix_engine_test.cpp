// Prefix reuse through the engine loop, f32 and int8 KV, hybrid (GDN) and dense models: a reused prefix gives the
// tokens and log-probabilities of a cold prefill, repeated and multi-turn prompts report their cached tokens, and
// eviction under a small pool or snapshot budget stays correct.
#include <array>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/runtime/engine.h"
#include "tests/model/reference_model.h"
#include "tests/support/request_collector.h"

namespace ninfer {
namespace {

using testing::Collector;
using testing::ReferenceModel;

struct Output {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  RequestResult result;
};

Output run(Engine& e, const std::vector<int32_t>& prompt, int64_t max_tokens = 12) {
  EngineRequest r;
  r.prompt = prompt;
  r.sampling.greedy = true;
  r.sampling.logprobs = true;
  r.max_tokens = max_tokens;
  auto c = std::make_shared<Collector>();
  EXPECT_TRUE(e.submit(std::move(r), c).accepted());
  c->wait();
  EXPECT_EQ(c->result.reason, FinishReason::kOutputLimit) << c->result.error;
  return {c->tokens, c->logprobs, c->result};
}

EngineOptions options(DType kv, bool prefix, int64_t prefill_chunk = 2048) {
  return {.max_context = 512, .prefill_chunk = prefill_chunk, .max_concurrency = 2, .kv_dtype = kv, .threads = 2,
          .prefix_cache = prefix};
}

// The same greedy tokens, and log-probabilities within what a different prefill chunking changes.
void expect_same(const Output& warm, const Output& cold, const std::string& what) {
  EXPECT_EQ(warm.tokens, cold.tokens) << what;
  ASSERT_EQ(warm.logprobs.size(), cold.logprobs.size()) << what;
  for (size_t i = 0; i < warm.logprobs.size(); ++i) EXPECT_NEAR(warm.logprobs[i], cold.logprobs[i], 1e-3) << what << " token " << i;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct Case {
  std::string model;
  DType kv;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model << (c.kv == DType::kI8 ? " int8 KV" : " f32 KV"); }

class PrefixReuse : public ::testing::TestWithParam<Case> {};

TEST_P(PrefixReuse, RepeatedAndMultiTurnPromptsReuseTheirPrefixAndMatchColdPrefill) {
  const Case& c = GetParam();
  ReferenceModel m(c.model, c.kv);
  auto index = testing::reference_index();
  const auto prompt = testing::read_i32(index["models"][c.model]["prompts"].back()["tokens"]);  // 333 tokens
  const std::vector<int32_t> follow_up{5, 17, 3, 42, 8, 9, 11};
  const int64_t n = static_cast<int64_t>(prompt.size());

  Engine cold(*m.artifact, m.config, options(c.kv, false));
  EXPECT_FALSE(cold.prefix_reuse());
  const Output cold_first = run(cold, prompt);
  const auto turn2 = concat(concat(prompt, cold_first.tokens), follow_up);
  const Output cold_turn2 = run(cold, turn2);

  Engine warm(*m.artifact, m.config, options(c.kv, true));
  ASSERT_TRUE(warm.prefix_reuse());
  EXPECT_EQ(warm.prefix_snapshot_rows(), m.config.num_linear_attention_layers() > 0 ? 4 : 0);
  const Output first = run(warm, prompt);
  EXPECT_EQ(first.result.cached_tokens, 0);
  expect_same(first, cold_first, "first request");

  // The same prompt again: every whole block before the last prompt token comes from the cache.
  const Output again = run(warm, prompt);
  EXPECT_EQ(again.result.cached_tokens, (n - 1) / 16 * 16);
  expect_same(again, cold_first, "repeated prompt");

  // The next turn extends prompt + answer: it resumes at the last block boundary the first answer reached.
  const Output turn = run(warm, turn2);
  EXPECT_EQ(turn.result.cached_tokens, (n + 12 - 1) / 16 * 16);
  expect_same(turn, cold_turn2, "second turn");
  EXPECT_GT(warm.stats().prefix.nodes, 0);

  // A prompt that shares only part of a block reuses the whole blocks before it (dense) or the last snapshot
  // (hybrid), and still matches a cold run.
  auto edited = turn2;
  edited[static_cast<size_t>(n + 3)] = (edited[static_cast<size_t>(n + 3)] + 1) % static_cast<int32_t>(m.config.vocab_size);
  const Output edited_warm = run(warm, edited);
  expect_same(edited_warm, run(cold, edited), "edited turn");
  EXPECT_GE(edited_warm.result.cached_tokens, (n - 1) / 16 * 16);
  EXPECT_LE(edited_warm.result.cached_tokens, n + 3);
}

TEST_P(PrefixReuse, ASharedSystemPromptIsReusedByLaterUsers) {
  const Case& c = GetParam();
  ReferenceModel m(c.model, c.kv);
  auto index = testing::reference_index();
  const auto text = testing::read_i32(index["models"][c.model]["prompts"].back()["tokens"]);
  const std::vector<int32_t> system(text.begin(), text.begin() + 160);  // 10 blocks
  Engine cold(*m.artifact, m.config, options(c.kv, false));
  Engine warm(*m.artifact, m.config, options(c.kv, true));
  const bool hybrid = m.config.num_linear_attention_layers() > 0;
  for (int user = 0; user < 3; ++user) {
    std::vector<int32_t> p = system;
    for (int i = 0; i < 20; ++i) p.push_back(text[static_cast<size_t>(200 + 40 * user + i)]);
    const Output w = run(warm, p);
    expect_same(w, run(cold, p), "user " + std::to_string(user));
    // Dense: the system prompt's blocks from the second user on. Hybrid: the second user finds the K/V without a
    // state and snapshots where it branches off, so the third user resumes there.
    const int64_t want = user == 0 || (hybrid && user == 1) ? 0 : 160;
    EXPECT_EQ(w.result.cached_tokens, want) << "user " << user;
  }
}

TEST_P(PrefixReuse, ChunkedPrefillOnTopOfAReusedPrefixMatchesColdPrefill) {
  const Case& c = GetParam();
  ReferenceModel m(c.model, c.kv);
  auto index = testing::reference_index();
  const auto prompt = testing::read_i32(index["models"][c.model]["prompts"].back()["tokens"]);
  Engine cold(*m.artifact, m.config, options(c.kv, false, 2048));
  Engine warm(*m.artifact, m.config, options(c.kv, true, 7));
  const Output cold_out = run(cold, prompt);
  expect_same(run(warm, prompt), cold_out, "chunked, cold cache");
  const Output reused = run(warm, prompt);
  EXPECT_GT(reused.result.cached_tokens, 0);
  expect_same(reused, cold_out, "chunked, reused prefix");
}

TEST_P(PrefixReuse, EvictionUnderASmallPoolAndSnapshotBudgetStaysCorrect) {
  const Case& c = GetParam();
  ReferenceModel m(c.model, c.kv);
  auto index = testing::reference_index();
  const auto& prompts = index["models"][c.model]["prompts"];
  std::vector<std::vector<int32_t>> ps;
  for (const auto& p : prompts) ps.push_back(testing::read_i32(p["tokens"]));
  ASSERT_GE(ps.size(), 3u);
  // One sequence at a time, a pool of 23 blocks (the longest prompt plus its output needs 22) and one snapshot:
  // every new prompt evicts what the previous ones left.
  EngineOptions small = options(c.kv, true);
  small.max_concurrency = 1;
  small.kv_capacity = 368;
  small.prefix_snapshots = 1;
  Engine warm(*m.artifact, m.config, small);
  Engine cold(*m.artifact, m.config, options(c.kv, false));
  for (int round = 0; round < 2; ++round)
    for (size_t i = 0; i < ps.size(); ++i) {
      const Output w = run(warm, ps[i]);
      expect_same(w, run(cold, ps[i]), "round " + std::to_string(round) + " prompt " + std::to_string(i));
      EXPECT_LE(warm.stats().prefix.snapshots, 1);
    }
  EXPECT_LE(warm.stats().prefix.nodes, 23);
}

TEST_P(PrefixReuse, ConcurrentRequestsOnATightPoolMatchColdOnesAndNeverRunOut) {
  const Case& c = GetParam();
  ReferenceModel m(c.model, c.kv);
  auto index = testing::reference_index();
  const auto text = testing::read_i32(index["models"][c.model]["prompts"].back()["tokens"]);
  // Prompts from three stems (shared prefixes of 40, 100 and 150 tokens) and distinct tails, in rounds of 6 submitted
  // at once to 3 running slots; 60 blocks hold 3 worst cases (prompt + 12 output tokens) and little else.
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 12; ++i) {
    const size_t stem = std::array<size_t, 3>{40, 100, 150}[static_cast<size_t>(i % 3)];
    std::vector<int32_t> p(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(stem));
    for (int j = 0; j < 10 + 7 * (i % 4); ++j) p.push_back(text[static_cast<size_t>(150 + (13 * i + j) % 180)]);
    prompts.push_back(std::move(p));
  }
  EngineOptions tight = options(c.kv, true);
  tight.max_concurrency = 3;
  tight.kv_capacity = 60 * 16;
  Engine warm(*m.artifact, m.config, tight), cold(*m.artifact, m.config, options(c.kv, false));
  int64_t cached = 0;
  for (size_t round = 0; round < prompts.size(); round += 6) {
    std::vector<std::shared_ptr<Collector>> ws;
    for (size_t i = round; i < round + 6; ++i) {
      EngineRequest r;
      r.prompt = prompts[i];
      r.sampling.greedy = true;
      r.max_tokens = 12;
      ws.push_back(std::make_shared<Collector>());
      const SubmitOutcome o = warm.submit(std::move(r), ws.back());
      ASSERT_TRUE(o.accepted()) << o.message;
    }
    for (size_t i = 0; i < ws.size(); ++i) {
      ws[i]->wait();
      ASSERT_EQ(ws[i]->result.reason, FinishReason::kOutputLimit) << ws[i]->result.error;
      EXPECT_EQ(ws[i]->tokens, run(cold, prompts[round + i]).tokens) << "prompt " << round + i;
      cached += ws[i]->result.cached_tokens;
    }
  }
  EXPECT_GT(cached, 0);
}

INSTANTIATE_TEST_SUITE_P(Models, PrefixReuse,
                         ::testing::Values(Case{"qwen35_untied", DType::kF32}, Case{"qwen35_untied", DType::kI8},
                                           Case{"qwen3_dense", DType::kF32}, Case{"qwen3_dense", DType::kI8}),
                         [](const auto& info) {
                           return info.param.model + (info.param.kv == DType::kI8 ? "_int8" : "_f32");
                         });

TEST(PrefixReuseTiny, TheDefaultModelWithInt8KvReusesARepeatedPrompt) {
  ReferenceModel m(ReferenceModel::Packed{std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer"}, DType::kI8);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 150; ++i) prompt.push_back(static_cast<int32_t>((i * 2654435761u) % 8000));
  Engine cold(*m.artifact, m.config, options(DType::kI8, false));
  Engine warm(*m.artifact, m.config, options(DType::kI8, true));
  const Output cold_out = run(cold, prompt, 16);
  expect_same(run(warm, prompt, 16), cold_out, "first");
  const Output again = run(warm, prompt, 16);
  EXPECT_EQ(again.result.cached_tokens, 144);
  expect_same(again, cold_out, "repeated");
}

TEST(PrefixReuseOptions, SnapshotRowsFollowTheOptionsAndAreNoneWithADrafter) {
  ReferenceModel hybrid("qwen35_untied"), dense("qwen3_dense");
  EngineOptions o = options(DType::kF32, true);
  EXPECT_EQ(prefix_snapshot_rows(hybrid.config, o), 4);  // 2 × max_concurrency
  EXPECT_EQ(prefix_snapshot_rows(dense.config, o), 0);   // K/V alone make a dense prefix reusable
  o.prefix_snapshots = 3;
  EXPECT_EQ(prefix_snapshot_rows(hybrid.config, o), 3);
  o.prefix_snapshots = -1;
  EXPECT_THROW(prefix_snapshot_rows(hybrid.config, o), Error);
  o.prefix_snapshots = 3;
  o.drafter = [](WeightStore&, const DrafterLimits&) -> std::unique_ptr<Drafter> { return nullptr; };
  EXPECT_EQ(prefix_snapshot_rows(hybrid.config, o), 0);  // prefix reuse is off with speculative decoding
  o.drafter = nullptr;
  o.prefix_cache = false;
  EXPECT_EQ(prefix_snapshot_rows(hybrid.config, o), 0);
}

}  // namespace
}  // namespace ninfer
