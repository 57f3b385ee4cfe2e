// The engine at tp 2 against tp 1 on ninfer-tiny: greedy and seeded-sampled tokens identical, alone and in a batch
// with chunked prefill; a cancel in the middle; what TP refuses at start. Prints decode tok/s of both.
#include <chrono>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/model/model_artifact.h"
#include "engine/runtime/engine.h"
#include "tests/parallel/tp_model.h"
#include "tests/support/request_collector.h"

namespace ninfer {
namespace {

using testing::Collector;

const std::string kTiny = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";

struct Outputs {
  std::vector<std::vector<int32_t>> tokens;
  double decode_tok_s = 0;  // the first request's, alone
};

std::vector<EngineRequest> requests() {
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < 4; ++i) {
    EngineRequest r;
    r.prompt = testing::random_tokens(static_cast<size_t>(20 + 37 * i), 8192, static_cast<uint32_t>(11 + i));
    r.max_tokens = i == 0 ? 64 : 24;
    if (i % 2) r.sampling.seed = 500 + i, r.sampling.temperature = 0.9f, r.sampling.top_p = 0.95f;
    else r.sampling.greedy = true;
    reqs.push_back(r);
  }
  return reqs;
}

Outputs run_engine(const Artifact& a, const ModelConfig& c, int tp) {
  Engine e(a, c, {.max_context = 512, .prefill_chunk = 32, .max_concurrency = 4, .threads = 2, .tp = tp});
  Outputs out;
  const auto reqs = requests();
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
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
  return out;
}

TEST(TpEngine, Tp2GreedyAndSeededTokensEqualTp1) {
  const Artifact a = Artifact::open(kTiny);
  const ModelConfig c = load_model_config(a);
  const Outputs one = run_engine(a, c, 1);
  const Outputs two = run_engine(a, c, 2);
  ASSERT_EQ(one.tokens.size(), two.tokens.size());
  for (size_t i = 0; i < one.tokens.size(); ++i) EXPECT_EQ(two.tokens[i], one.tokens[i]) << "request " << i;
  EXPECT_EQ(one.tokens[0].size(), 64u);
  std::printf("ninfer-tiny decode, batch 1, 2 threads in all: tp1 %.1f tok/s, tp2 %.1f tok/s\n", one.decode_tok_s,
              two.decode_tok_s);
}

TEST(TpEngine, CancelUnderTp2) {
  const Artifact a = Artifact::open(kTiny);
  Engine e(a, load_model_config(a), {.max_context = 2048, .prefill_chunk = 64, .max_concurrency = 2, .threads = 2, .tp = 2});
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
  // The engine goes on serving after the cancel.
  r.max_tokens = 5;
  auto next = std::make_shared<Collector>();
  ASSERT_TRUE(e.submit(r, next).accepted());
  next->wait();
  EXPECT_EQ(next->result.reason, FinishReason::kOutputLimit);
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
  EXPECT_NE(message({.backend = BackendKind::kCuda, .tp = 2}).find("NCCL TP, which is not built yet"), std::string::npos);
  EXPECT_NE(message({.threads = 1, .tp = 2, .drafter = [](WeightStore&, const DrafterLimits&) -> std::unique_ptr<Drafter> {
                       return nullptr;
                     }}).find("speculative decoding under tensor parallelism"),
            std::string::npos);
  EXPECT_NE(message({.threads = 1, .tp = 3}).find("do not divide over 3 ranks"), std::string::npos);
  Engine prefix(a, c, {.max_context = 256, .max_concurrency = 1, .threads = 1, .tp = 2, .prefix_cache = true});
  EXPECT_FALSE(prefix.prefix_reuse());
}

}  // namespace
}  // namespace ninfer
