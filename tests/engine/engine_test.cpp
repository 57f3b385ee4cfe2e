// The engine loop end to end on a reference model: greedy vs transformers, batching, seeds, cancel, limits.
#include <condition_variable>
#include <mutex>

#include <gtest/gtest.h>

#include <map>

#include "engine/backend/profiling_backend.h"
#include "engine/constrain/think_stop_mask.h"
#include "engine/model/model_artifact.h"
#include "engine/runtime/engine.h"
#include "tests/support/request_collector.h"
#include "tests/model/reference_model.h"

namespace ninfer {
namespace {

using testing::Collector;

struct EngineFixture {
  explicit EngineFixture(const std::string& name, EngineOptions o) : ref(name) {
    engine = std::make_unique<Engine>(*ref.artifact, ref.config, o);
  }
  std::shared_ptr<Collector> run(EngineRequest r) {
    auto c = std::make_shared<Collector>();
    auto out = engine->submit(std::move(r), c);
    EXPECT_TRUE(out.accepted()) << out.message;
    return c;
  }
  testing::ReferenceModel ref;
  std::unique_ptr<Engine> engine;
};

std::vector<int32_t> prompt(const std::string& model, size_t i) {
  return testing::read_i32(testing::reference_index()["models"][model]["prompts"][i]["tokens"]);
}

// Also through the op profiler (ProfilingBackend, --profile-ops of ninfer-bench-decode), which only times: the same
// tokens, and a profile holding every op family the hybrid model runs.
TEST(Engine, GreedyMatchesTransformersAndReportsTimings) {
  for (bool profiled : {false, true}) {
    SCOPED_TRACE(profiled ? "op profile" : "plain");
    auto profile = profiled ? std::make_shared<OpProfile>() : nullptr;
    EngineFixture f("qwen35_untied", {.max_context = 512, .prefill_chunk = 48, .max_concurrency = 2, .threads = 2,
                                      .op_profile = profile});
    auto index = testing::reference_index();
    size_t tokens = 0;
    for (const auto& g : index["models"]["qwen35_untied"]["greedy"]) {
      auto want = testing::read_i32(g["tokens"]);
      tokens += want.size();
      EngineRequest r;
      r.prompt = prompt("qwen35_untied", g["prompt_index"].get<size_t>());
      r.sampling.greedy = true;
      r.max_tokens = static_cast<int64_t>(want.size());
      auto c = f.run(r);
      c->wait();
      EXPECT_EQ(c->tokens, want);
      EXPECT_EQ(c->result.reason, FinishReason::kOutputLimit);
      EXPECT_EQ(c->result.completion_tokens, static_cast<int64_t>(want.size()));
      EXPECT_EQ(c->result.prompt_tokens, static_cast<int64_t>(r.prompt.size()));
      const auto& t = c->result.timings;
      EXPECT_GE(t.queue_s, 0);
      EXPECT_GT(t.prefill_s, 0);
      EXPECT_GT(t.decode_s, 0);
      EXPECT_LE(t.ttft_s, t.total_s);
      EXPECT_LE(t.queue_s + t.prefill_s, t.ttft_s + 1e-3);
    }
    EXPECT_EQ(f.engine->stats().kv_blocks_used, 0);
    EXPECT_GT(f.engine->stats().argmax_rows, 0);  // greedy alone: the backend chose, the rows stayed there
    if (!profiled) continue;
    EXPECT_NE(f.engine->backend_name().find("[op profile]"), std::string::npos) << f.engine->backend_name();
    std::map<std::string, OpProfile::Entry> by_op;
    for (const OpProfile::Entry& e : profile->entries()) by_op[e.op] = e;
    for (const char* op : {"embedding", "rms_norm", "add_rms_norm", "attention", "kv_write", "rope", "gated_delta_rule", "conv1d",
                           "gdn_gating", "l2_norm", "gated_rms_norm", "silu_mul"})
      EXPECT_GT(by_op[op].calls, 0u) << op;
    // Each output token but the last is a decode step through every full-attention layer.
    EXPECT_GE(by_op["attention"].calls, static_cast<uint64_t>(f.ref.config.num_full_attention_layers()) * tokens / 2);
    double flops = 0;
    for (const auto& [op, e] : by_op)
      if (op.rfind("linear", 0) == 0) flops += e.flops;
    EXPECT_GT(flops, 0);
    EXPECT_GT(profile->total_seconds(), 0);
    EXPECT_NE(profile->table().find("| all ops |"), std::string::npos) << profile->table();
  }
}

// --dense-activations bf16 reaches the backend through EngineOptions: the bf16 reference model's linears run with
// bf16 activations (the backend says so, and bf16 linears ran) and requests complete. Its logits against the exact
// ones: GoldenBf16.Bf16ActivationsStayNearTheExactLogits (tests/model/golden_test.cpp).
TEST(Engine, Bf16ActivationsReachTheBackend) {
  auto profile = std::make_shared<OpProfile>();
  EngineFixture f("qwen35_untied_bf16", {.max_context = 512, .prefill_chunk = 48, .max_concurrency = 2,
                                         .threads = 2, .bf16_activations = true, .op_profile = profile});
  EXPECT_NE(f.engine->backend_name().find("bf16 activations"), std::string::npos) << f.engine->backend_name();
  EngineRequest r;
  r.prompt = prompt("qwen35_untied_bf16", 0);
  r.sampling.greedy = true;
  r.max_tokens = 16;
  auto c = f.run(r);
  c->wait();
  EXPECT_EQ(c->result.completion_tokens, 16);
  uint64_t bf16_linears = 0;
  for (const OpProfile::Entry& e : profile->entries())
    if (e.op.rfind("linear bf16", 0) == 0) bf16_linears += e.calls;
  EXPECT_GT(bf16_linears, 0u) << profile->table();
}

// One linear through the profiler: the inner backend's bits, labelled by weight dtype and row count, 2·M·N·K FLOPs.
TEST(OpProfile, ALinearIsTimedWithItsFlopsAndTheSameResult) {
  auto profile = std::make_shared<OpProfile>();
  ProfilingBackend profiled(make_backend({.kind = BackendKind::kCpu, .threads = 1}), profile);
  auto plain = make_backend({.kind = BackendKind::kCpu, .threads = 1});
  std::vector<float> x(3 * 16), w(5 * 16), y1(3 * 5), y2(3 * 5);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(static_cast<int>(i % 7) - 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.5f * static_cast<float>(static_cast<int>(i % 5) - 2);
  const Tensor tx = Tensor::make(x.data(), DType::kF32, {3, 16}), tw = Tensor::make(w.data(), DType::kF32, {5, 16});
  profiled.linear(Tensor::make(y1.data(), DType::kF32, {3, 5}), tx, tw);
  plain->linear(Tensor::make(y2.data(), DType::kF32, {3, 5}), tx, tw);
  EXPECT_EQ(y1, y2);
  const std::vector<OpProfile::Entry> e = profile->entries();
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].op, "linear f32 M=2..8");
  EXPECT_EQ(e[0].calls, 1u);
  EXPECT_EQ(e[0].flops, 2.0 * 3 * 5 * 16);
  EXPECT_GE(e[0].seconds, 0);
  profile->clear();
  EXPECT_TRUE(profile->entries().empty());
}

TEST(Engine, ConcurrentRequestsEqualAloneGreedyAndSeeded) {
  EngineFixture f("qwen35_tied", {.max_context = 512, .prefill_chunk = 40, .max_concurrency = 3, .threads = 2});
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < 6; ++i) {
    EngineRequest r;
    r.prompt = prompt("qwen35_tied", static_cast<size_t>(1 + i % 3));
    r.max_tokens = 24;
    if (i % 2) r.sampling.seed = 100 + i, r.sampling.temperature = 0.9f, r.sampling.top_p = 0.95f;
    else r.sampling.greedy = true;
    reqs.push_back(r);
  }
  std::vector<std::vector<int32_t>> alone;
  for (const auto& r : reqs) {
    auto c = f.run(r);
    c->wait();
    alone.push_back(c->tokens);
  }
  std::vector<std::shared_ptr<Collector>> together;
  for (const auto& r : reqs) together.push_back(f.run(r));
  for (size_t i = 0; i < reqs.size(); ++i) {
    together[i]->wait();
    EXPECT_EQ(together[i]->tokens, alone[i]) << "request " << i;
  }
  EXPECT_NE(alone[1], alone[3]);  // different seeds on the same prompt family give different text
  EXPECT_EQ(f.engine->stats().kv_blocks_used, 0);
  EXPECT_EQ(f.engine->stats().running, 0);
}

// One engine over `model` serving `reqs` at once, with the backend's choices (EngineOptions::backend_choice) on or off
// and an output mask (empty: every id): each request's tokens and logprobs, and how the steps' rows came back.
struct ChoiceRun {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<float>> logprobs;
  int64_t argmax_rows = 0, top_rows = 0;
};

ChoiceRun run_choices(const std::string& model, bool backend_choice, const std::vector<uint8_t>& allowed,
                      const std::vector<EngineRequest>& reqs) {
  EngineFixture f(model, {.max_context = 512, .prefill_chunk = 48, .max_concurrency = 5, .threads = 2,
                          .output_ids = allowed, .backend_choice = backend_choice});
  std::vector<std::shared_ptr<Collector>> cs;
  for (const auto& r : reqs) cs.push_back(f.run(r));
  ChoiceRun out;
  for (auto& c : cs) {
    c->wait();
    out.tokens.push_back(c->tokens);
    out.logprobs.push_back(c->logprobs);
  }
  out.argmax_rows = f.engine->stats().argmax_rows;
  out.top_rows = f.engine->stats().top_rows;
  return out;
}

// Plain greedy steps take the rows' argmax on the backend (EngineOptions::backend_choice) and bring back the ids only;
// the host path copies every row and chooses. Both give the same tokens: with the output mask (EngineOptions::
// output_ids, applied on the backend) ruling out the reference's own greedy tokens, and in batches that mix plain
// greedy requests with those the host must choose for (seeded sampling, logprobs, a penalty), which make those steps
// bring the rows back.
TEST(Engine, BackendArgmaxChoosesAsTheHostDoes) {
  const std::string model = "qwen35_untied";
  auto index = testing::reference_index();
  const auto& g0 = index["models"][model]["greedy"][0];
  const std::vector<int32_t> want = testing::read_i32(g0["tokens"]);
  ASSERT_GE(want.size(), 2u);
  const size_t p0 = g0["prompt_index"].get<size_t>();
  const auto make = [&](size_t p, int kind) {
    EngineRequest r;
    r.prompt = prompt(model, p);
    r.max_tokens = 12;
    r.sampling.greedy = kind != 2;
    if (kind == 1) r.sampling.logprobs = true, r.sampling.top_logprobs = 3;
    if (kind == 2) r.sampling.seed = 7, r.sampling.temperature = 0.8f;
    if (kind == 3) r.sampling.presence_penalty = 0.5f;
    return r;
  };
  const auto run = [&](bool backend_choice, const std::vector<uint8_t>& allowed, const std::vector<EngineRequest>& reqs) {
    return run_choices(model, backend_choice, allowed, reqs);
  };
  const std::vector<EngineRequest> greedy = {make(p0, 0), make(1, 0), make(2, 0)};
  const std::vector<EngineRequest> mixed = {make(p0, 0), make(1, 1), make(p0, 2), make(2, 3)};
  std::vector<uint8_t> allowed(static_cast<size_t>(testing::ReferenceModel(model).config.vocab_size), 1);
  allowed[static_cast<size_t>(want[0])] = 0;
  allowed[static_cast<size_t>(want[1])] = 0;
  for (const bool masked : {false, true}) {
    SCOPED_TRACE(masked ? "masked" : "every id");
    const std::vector<uint8_t> ids = masked ? allowed : std::vector<uint8_t>{};
    const ChoiceRun on = run(true, ids, greedy), off = run(false, ids, greedy);
    EXPECT_EQ(on.tokens, off.tokens);
    EXPECT_GT(on.argmax_rows, 0);
    EXPECT_EQ(off.argmax_rows, 0);
    if (!masked) {
      EXPECT_EQ(std::vector<int32_t>(on.tokens[0].begin(), on.tokens[0].begin() + 2),
                std::vector<int32_t>(want.begin(), want.begin() + 2));
    } else {
      for (const auto& t : on.tokens)
        for (int32_t id : t) EXPECT_TRUE(allowed[static_cast<size_t>(id)]) << "masked id " << id << " produced";
      EXPECT_NE(on.tokens[0][0], want[0]);
    }
    const ChoiceRun mix_on = run(true, ids, mixed), mix_off = run(false, ids, mixed);
    EXPECT_EQ(mix_on.tokens, mix_off.tokens);
    EXPECT_EQ(mix_on.logprobs, mix_off.logprobs);
    EXPECT_EQ(mix_on.tokens[0], on.tokens[0]);  // the plain greedy request as in the all-greedy batch
    EXPECT_EQ(mix_off.argmax_rows, 0);
  }
}

// Steps whose sampled rows are all plain top-k draws (or plain greedy) bring back each row's first top_k pairs
// (Backend::top_k_rows) and draw from those: the same tokens as the host drawing from whole rows, with the same seeds,
// in one batch of different top_k, top_p, min_p and temperatures beside a greedy request, with and without the output
// mask; a request that needs its row (logprobs) takes the batch back to whole rows.
TEST(Engine, BackendTopKDrawsAsTheHostDoes) {
  const std::string model = "qwen35_untied";
  const auto make = [&](size_t p, int kind) {
    EngineRequest r;
    r.prompt = prompt(model, p);
    r.max_tokens = 12;
    r.sampling.seed = 100 + static_cast<uint64_t>(kind);
    r.sampling.temperature = 0.8f;
    if (kind == 0) r.sampling.top_k = 20;
    if (kind == 1) r.sampling.top_k = 5, r.sampling.top_p = 0.9f, r.sampling.temperature = 1.3f;
    if (kind == 2) r.sampling.top_k = kTopKRowsMax, r.sampling.min_p = 0.05f;
    if (kind == 3) r.sampling.greedy = true;
    if (kind == 4) r.sampling.top_k = 20, r.sampling.logprobs = true;
    if (kind == 5)
      r.sampling.top_k = 20, r.sampling.presence_penalty = 0.5f, r.sampling.frequency_penalty = 0.5f,
      r.sampling.repetition_penalty = 1.2f;
    if (kind == 6) r.sampling.top_k = 10, r.sampling.logit_bias = {{3, 4.0f}, {7, -100.0f}, {11, 1.5f}};
    if (kind == 7)  // a think block's stop mask (ids 0–2 until id 3): a constraint applied as edits, a fresh one per run
      r.sampling.top_k = 20, r.constraint = std::make_shared<ThinkStopMask>(std::vector<int32_t>{0, 1, 2}, 3, nullptr);
    return r;
  };
  const auto run = [&](bool backend_choice, const std::vector<uint8_t>& allowed, const std::vector<EngineRequest>& reqs) {
    return run_choices(model, backend_choice, allowed, reqs);
  };
  const std::vector<EngineRequest> plain = {make(0, 0), make(1, 1), make(2, 2), make(3, 3)};
  std::vector<EngineRequest> with_logprobs = plain;
  with_logprobs.push_back(make(0, 4));
  std::vector<uint8_t> allowed(static_cast<size_t>(testing::ReferenceModel(model).config.vocab_size), 1);
  for (size_t id = 0; id < allowed.size(); id += 3) allowed[id] = 0;
  for (const auto& r : with_logprobs)  // a prompt may not hold an id the model may not produce
    for (int32_t id : r.prompt) allowed[static_cast<size_t>(id)] = 1;
  for (const bool masked : {false, true}) {
    SCOPED_TRACE(masked ? "masked" : "every id");
    const std::vector<uint8_t> ids = masked ? allowed : std::vector<uint8_t>{};
    const ChoiceRun on = run(true, ids, plain), off = run(false, ids, plain);
    EXPECT_EQ(on.tokens, off.tokens);
    EXPECT_GT(on.top_rows, 0);
    EXPECT_EQ(off.top_rows, 0);
    for (const auto& t : on.tokens) {
      EXPECT_EQ(t.size(), 12u);
      if (masked)
        for (int32_t id : t) EXPECT_TRUE(allowed[static_cast<size_t>(id)]) << "masked id " << id << " produced";
    }
    EXPECT_NE(on.tokens[0], on.tokens[1]);  // the draws differ from request to request
    const ChoiceRun mix_on = run(true, ids, with_logprobs), mix_off = run(false, ids, with_logprobs);
    EXPECT_EQ(mix_on.tokens, mix_off.tokens);
    EXPECT_EQ(std::vector(mix_on.tokens.begin(), mix_on.tokens.begin() + 4), on.tokens);  // a request's draws alone
    // Penalties and a logit_bias are edits of the rows on the backend (Backend::edit_logits), not a reason for rows.
    const auto edited = [&] { return std::vector<EngineRequest>{make(0, 5), make(1, 6), make(2, 3), make(0, 7)}; };
    const ChoiceRun ed_on = run(true, ids, edited()), ed_off = run(false, ids, edited());
    EXPECT_EQ(ed_on.tokens, ed_off.tokens);
    EXPECT_GT(ed_on.top_rows, 0);
    EXPECT_EQ(ed_off.top_rows, 0);
    for (int32_t id : ed_on.tokens[1]) EXPECT_NE(id, 7) << "a banned id produced";
    for (int32_t id : ed_on.tokens[3]) {
      if (id == 3) break;
      EXPECT_GT(id, 2) << "a stop id inside the think block";
    }
  }
}

TEST(Engine, CancelFreesKvAndEndsTheRequest) {
  EngineFixture f("qwen35_tied", {.max_context = 4096, .prefill_chunk = 64, .max_concurrency = 2, .threads = 2});
  EngineRequest r;
  r.prompt = prompt("qwen35_tied", 3);
  r.sampling.greedy = true;
  auto c = f.run(r);  // no max_tokens: would run to the 4096 context
  c->wait_tokens(3);
  EXPECT_GT(f.engine->stats().kv_blocks_used, 0);
  // cancel() is by id; the first request of this engine has id 1.
  f.engine->cancel(1);
  c->wait();
  EXPECT_EQ(c->result.reason, FinishReason::kCancelled);
  EXPECT_EQ(f.engine->stats().kv_blocks_used, 0);
  f.engine->cancel(1);  // idempotent
}

TEST(Engine, LimitsStopIdsAndRefusals) {
  EngineFixture f("qwen3_dense", {.max_context = 40, .prefill_chunk = 8, .max_concurrency = 2, .threads = 1});
  EngineRequest r;
  r.prompt = prompt("qwen3_dense", 1);  // 17 tokens
  r.sampling.greedy = true;
  auto ctx = f.run(r);
  ctx->wait();
  EXPECT_EQ(ctx->result.reason, FinishReason::kContextLimit);
  EXPECT_EQ(ctx->result.completion_tokens, 40 - 17);

  EngineRequest stop = r;
  stop.max_tokens = 10;
  stop.stop_ids = {ctx->tokens[4]};
  auto s = f.run(stop);
  s->wait();
  EXPECT_EQ(s->result.reason, FinishReason::kEos);
  EXPECT_EQ(s->tokens.back(), ctx->tokens[4]);
  EXPECT_LE(s->tokens.size(), 5u);

  EngineRequest big = r;
  big.max_tokens = 30;
  auto refused = f.engine->submit(big, std::make_shared<Collector>());
  EXPECT_EQ(refused.status, SubmitStatus::kContextLength);
  EXPECT_NE(refused.message.find("17"), std::string::npos) << refused.message;
  EngineRequest bad = r;
  bad.prompt.push_back(100000);
  EXPECT_EQ(f.engine->submit(bad, std::make_shared<Collector>()).status, SubmitStatus::kInvalid);
  EXPECT_EQ(f.engine->submit(EngineRequest{}, std::make_shared<Collector>()).status, SubmitStatus::kInvalid);
}

class ForceAfterThird : public TokenController {
 public:
  std::vector<int32_t> after_token(int32_t) override { return ++n_ == 3 ? std::vector<int32_t>{5, 6} : std::vector<int32_t>{}; }

 private:
  int n_ = 0;
};

TEST(Engine, ControllerForcedTokensAreAppendedAndMarked) {
  EngineFixture f("qwen35_tied", {.max_context = 256, .prefill_chunk = 64, .max_concurrency = 1, .threads = 2});
  EngineRequest r;
  r.prompt = prompt("qwen35_tied", 1);
  r.sampling.greedy = true;
  r.max_tokens = 8;
  r.controller = std::make_shared<ForceAfterThird>();
  auto c = f.run(r);
  c->wait();
  ASSERT_EQ(c->tokens.size(), 8u);
  EXPECT_EQ(c->tokens[3], 5);
  EXPECT_EQ(c->tokens[4], 6);
  EXPECT_TRUE(c->forced[3] && c->forced[4]);
  EXPECT_FALSE(c->forced[0] || c->forced[5]);
}

}  // namespace
}  // namespace ninfer
