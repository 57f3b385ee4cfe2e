// The engine at tp 2 (and tp 4 on a reference fixture) against tp 1: greedy, seeded-sampled and seeded top-k tokens identical, alone
// and in a batch of 4 with chunked prefill, plain, with int8 KV, with --spec mtp and --spec dflash2 (the drafter on
// rank 0), and with prefix reuse (the same cached tokens); a cancel in the middle frees every block; what TP refuses at
// start. Prints decode tok/s of the plain runs.
#include <chrono>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/model/model_artifact.h"
#include "engine/runtime/engine.h"
#include "engine/speculative/drafter_registry.h"
#include "tests/model/reference_model.h"
#include "tests/parallel/tp_model.h"
#include "tests/support/request_collector.h"

namespace ninfer {
namespace {

using testing::Collector;

const std::string kTiny = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";

// What varies between the engine runs compared at TP1 and TP N.
struct Setup {
  std::string spec{};  // "", "mtp" or "dflash2"
  DType kv_dtype = DType::kF32;
};

EngineOptions engine_options(const Artifact& a, const ModelConfig& c, int tp, const Setup& setup) {
  EngineOptions o{.max_context = 512, .prefill_chunk = 32, .max_concurrency = 4, .kv_dtype = setup.kv_dtype,
                  .threads = 2, .tp = tp};
  if (!setup.spec.empty()) {
    o.drafter = make_drafter_factory(setup.spec, a, c, false);
    o.draft_tokens = default_draft_tokens(setup.spec);
  }
  return o;
}

struct Outputs {
  std::vector<std::vector<int32_t>> tokens;
  double decode_tok_s = 0;  // the first request's, alone
  int64_t accepted = 0;     // drafts accepted in all (speculative runs)
  int64_t argmax_rows = 0;  // greedy choices made on the ranks (EngineStats::argmax_rows)
  int64_t top_rows = 0;     // top-k draws from the ranks' first pairs (EngineStats::top_rows)
};

std::vector<EngineRequest> requests(int64_t vocab) {
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < 4; ++i) {
    EngineRequest r;
    r.prompt = testing::random_tokens(static_cast<size_t>(20 + 37 * i), vocab, static_cast<uint32_t>(11 + i));
    r.max_tokens = i == 0 ? 64 : 24;
    if (i % 2) r.sampling.seed = 500 + i, r.sampling.temperature = 0.9f, r.sampling.top_p = 0.95f;
    else r.sampling.greedy = true;
    if (i == 3) r.sampling.top_k = 20;  // a plain top-k draw: the ranks' first pairs are gathered, not the rows
    // Penalties and a logit_bias: each rank edits its share of the columns before its pairs (StepMessage::edits).
    if (i == 2) r.sampling.repetition_penalty = 1.3f, r.sampling.frequency_penalty = 0.2f;
    if (i == 3) r.sampling.presence_penalty = 0.4f, r.sampling.logit_bias = {{5, 2.0f}, {9, -100.0f}};
    reqs.push_back(r);
  }
  return reqs;
}

Outputs run_engine(const Artifact& a, const ModelConfig& c, int tp, const Setup& setup = {}) {
  Engine e(a, c, engine_options(a, c, tp, setup));
  Outputs out;
  const auto reqs = requests(c.vocab_size);
  for (size_t i = 0; i < reqs.size(); ++i) {  // alone
    auto col = std::make_shared<Collector>();
    EXPECT_TRUE(e.submit(reqs[i], col).accepted());
    col->wait();
    out.tokens.push_back(col->tokens);
    if (i == 0 && col->result.timings.decode_s > 0)
      out.decode_tok_s = static_cast<double>(col->result.completion_tokens - 1) / col->result.timings.decode_s;
  }
  std::vector<std::shared_ptr<Collector>> together;  // batched, prefills chunked beside decodes
  for (const auto& r : reqs) {
    together.push_back(std::make_shared<Collector>());
    EXPECT_TRUE(e.submit(r, together.back()).accepted());
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    together[i]->wait();
    EXPECT_EQ(together[i]->tokens, out.tokens[i]) << "tp " << tp << ": request " << i << " batched vs alone";
  }
  const EngineStats stats = e.stats();
  EXPECT_EQ(stats.kv_blocks_used, 0);
  EXPECT_EQ(stats.kv_blocks_allocated, 0);  // no prefix cache here: every block is back on the free list
  out.accepted = stats.spec.accepted_tokens;
  out.argmax_rows = stats.argmax_rows;
  out.top_rows = stats.top_rows;
  return out;
}

// TP N's tokens equal TP1's for the same engine setup; returns TP1's outputs.
Outputs expect_tp_equals_tp1(const Artifact& a, int tp, const Setup& setup) {
  const ModelConfig c = load_model_config(a);
  const Outputs one = run_engine(a, c, 1, setup);
  const Outputs many = run_engine(a, c, tp, setup);
  EXPECT_EQ(one.tokens[0].size(), 64u);
  EXPECT_EQ(many.tokens, one.tokens) << "tp " << tp << (setup.spec.empty() ? "" : " --spec " + setup.spec);
  // The greedy requests' steps chose on the ranks: each rank's best pair gathered (vocab_parallel_argmax), not the rows.
  EXPECT_GT(many.argmax_rows, 0);
  // The top-k request's draws came from each rank's first pairs gathered and merged (vocab_parallel_top).
  EXPECT_GT(many.top_rows, 0);
  if (!setup.spec.empty()) {  // the drafter is wired right under TP only if the target accepts its drafts
    EXPECT_GT(one.accepted, 0);
    // A split drafter drafts TP1's tokens (its scores differ only in summation order), so the same drafts are accepted.
    EXPECT_EQ(many.accepted, one.accepted);
  }
  std::printf("decode, batch 1, 2 threads in all%s: tp1 %.1f tok/s, tp%d %.1f tok/s; accepted drafts %lld / %lld\n",
              setup.spec.empty() ? "" : (" --spec " + setup.spec).c_str(), one.decode_tok_s, tp, many.decode_tok_s,
              static_cast<long long>(one.accepted), static_cast<long long>(many.accepted));
  return one;
}

TEST(TpEngine, Tp2GreedyAndSeededTokensEqualTp1) { expect_tp_equals_tp1(Artifact::open(kTiny), 2, {}); }

TEST(TpEngine, Tp2WithInt8KvEqualsTp1) { expect_tp_equals_tp1(Artifact::open(kTiny), 2, {.kv_dtype = DType::kI8}); }

TEST(TpEngine, Tp2WithMtpEqualsTp1) { expect_tp_equals_tp1(Artifact::open(kTiny), 2, {.spec = "mtp"}); }

TEST(TpEngine, Tp2WithDflash2EqualsTp1) { expect_tp_equals_tp1(Artifact::open(kTiny), 2, {.spec = "dflash2"}); }

// The default model at TP4: KV and GDN key heads replicated, the MTP drafter split over 4 ranks (1 query head each).
TEST(TpEngine, Tp4WithMtpEqualsTp1) { expect_tp_equals_tp1(Artifact::open(kTiny), 4, {.spec = "mtp"}); }

TEST(TpEngine, Tp4WithDflash2EqualsTp1) { expect_tp_equals_tp1(Artifact::open(kTiny), 4, {.spec = "dflash2"}); }

// A reference fixture whose KV and GDN key heads are replicated at TP4.
TEST(TpEngine, Tp4OnAReferenceModelEqualsTp1) {
  testing::ReferenceModel ref("qwen35_tied");
  expect_tp_equals_tp1(*ref.artifact, 4, {});
}

// Prefix reuse: prompts sharing a prefix reuse its blocks (and GDN snapshots) at TP N exactly as at TP1.
struct PrefixRun {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<int64_t> cached;
  PrefixCacheStats stats;
};

PrefixRun run_prefix(const Artifact& a, int tp) {
  const ModelConfig c = load_model_config(a);
  Engine e(a, c, {.max_context = 512, .prefill_chunk = 32, .max_concurrency = 4, .threads = 2, .tp = tp,
                  .prefix_cache = true});
  EXPECT_TRUE(e.prefix_reuse());
  const std::vector<int32_t> shared = testing::random_tokens(48, c.vocab_size, 21);  // 3 blocks of 16
  PrefixRun out;
  auto submit = [&](uint32_t tail_seed, size_t tail, bool greedy) {
    EngineRequest r;
    r.prompt = shared;
    const auto t = testing::random_tokens(tail, c.vocab_size, tail_seed);
    r.prompt.insert(r.prompt.end(), t.begin(), t.end());
    r.max_tokens = 16;
    if (greedy) r.sampling.greedy = true;
    else r.sampling.seed = 77, r.sampling.temperature = 0.8f;
    auto col = std::make_shared<Collector>();
    EXPECT_TRUE(e.submit(r, col).accepted());
    col->wait();
    out.tokens.push_back(col->tokens);
    out.cached.push_back(col->result.cached_tokens);
  };
  submit(1, 22, true);   // cold; keeps its last block boundary (64)
  submit(2, 9, false);   // leaves the first prompt's K/V at 48: a snapshot is taken there
  submit(3, 30, true);   // starts at 48
  submit(1, 22, false);  // the first prompt again: starts at 64
  out.stats = e.stats().prefix;
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
  return out;
}

void expect_prefix_equals_tp1(const Artifact& a, int tp) {
  const PrefixRun one = run_prefix(a, 1), many = run_prefix(a, tp);
  EXPECT_EQ(many.tokens, one.tokens) << "tp " << tp;
  EXPECT_EQ(many.cached, one.cached) << "tp " << tp;
  EXPECT_EQ(one.cached[2], 48);
  EXPECT_EQ(one.cached[3], 64);
  EXPECT_EQ(many.stats.nodes, one.stats.nodes);
  EXPECT_EQ(many.stats.snapshots, one.stats.snapshots);
}

TEST(TpEngine, Tp2PrefixReuseEqualsTp1) { expect_prefix_equals_tp1(Artifact::open(kTiny), 2); }

TEST(TpEngine, Tp4PrefixReuseOnAReferenceModelEqualsTp1) {
  testing::ReferenceModel ref("qwen35_tied");
  expect_prefix_equals_tp1(*ref.artifact, 4);
}

void cancel_under_tp2(const std::string& spec) {
  SCOPED_TRACE(spec.empty() ? "plain" : "--spec " + spec);
  const Artifact a = Artifact::open(kTiny);
  const ModelConfig c = load_model_config(a);
  EngineOptions o{.max_context = 2048, .prefill_chunk = 64, .max_concurrency = 2, .threads = 2, .tp = 2};
  if (!spec.empty()) o.drafter = make_drafter_factory(spec, a, c, false);
  Engine e(a, c, o);
  EngineRequest r;
  r.prompt = testing::random_tokens(40, 8192, 5);
  r.sampling.greedy = true;
  auto col = std::make_shared<Collector>();
  const auto out = e.submit(r, col);
  ASSERT_TRUE(out.accepted());
  col->wait_tokens(3);
  e.cancel(out.id);
  col->wait();
  EXPECT_EQ(col->result.reason, FinishReason::kCancelled);
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
  EXPECT_EQ(e.stats().kv_blocks_allocated, 0);
  // The engine goes on serving after the cancel.
  r.max_tokens = 5;
  auto next = std::make_shared<Collector>();
  ASSERT_TRUE(e.submit(r, next).accepted());
  next->wait();
  EXPECT_EQ(next->result.reason, FinishReason::kOutputLimit);
  EXPECT_EQ(e.stats().kv_blocks_allocated, 0);
}

TEST(TpEngine, CancelUnderTp2) {
  cancel_under_tp2("");
  cancel_under_tp2("mtp");
}

TEST(TpEngine, RefusedAtStart) {
  const Artifact a = Artifact::open(kTiny);
  const ModelConfig c = load_model_config(a);
  auto message = [&](EngineOptions o) {
    try {
      Engine e(a, c, o);
    } catch (const Error& err) {
      return std::string(err.what());
    }
    return std::string("accepted");
  };
  // CUDA TP needs one device per rank; without a GPU (or a CUDA build) the backend itself is refused.
  EXPECT_NE(message({.backend = BackendKind::kCuda, .devices = {0}, .tp = 2}).find("1 devices for tp 2"),
            std::string::npos);
  EXPECT_NE(message({.backend = BackendKind::kCuda, .tp = 2}), "accepted");
  EXPECT_NE(message({.threads = 1, .tp = 3}).find("do not divide over 3 ranks"), std::string::npos);
}

}  // namespace
}  // namespace ninfer
