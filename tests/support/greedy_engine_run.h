// Owns running a batch of greedy requests through an Engine with an optional drafter, for the speculative tests.
#pragma once

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "engine/runtime/engine.h"
#include "tests/support/request_collector.h"

namespace ninfer::testing {

struct GreedyRun {
  std::vector<std::vector<int32_t>> outputs;  // per prompt, the generated ids
  std::vector<RequestResult> results;
  EngineStats stats;  // after the last request finished
};

// Submits every prompt at once (a batch of prompts.size() sequences), greedy, `max_tokens` each, no stop ids, on an
// engine with `drafter` (none when empty) drafting `draft_tokens` per step, on `backend` with a `kv_dtype` cache, at
// tensor parallelism `tp` (CUDA: on `devices`, one per rank), with op graphs for decode steps when `step_graphs`.
inline GreedyRun run_greedy(const Artifact& a, const ModelConfig& c, const DrafterFactory& drafter, int32_t draft_tokens,
                            int64_t prefill_chunk, const std::vector<std::vector<int32_t>>& prompts,
                            int64_t max_tokens = 40, BackendKind backend = BackendKind::kCpu,
                            DType kv_dtype = DType::kF32, int64_t max_context = 256, int tp = 1,
                            std::vector<int> devices = {}, bool step_graphs = false) {
  EngineOptions o{.max_context = max_context, .prefill_chunk = prefill_chunk,
                  .max_concurrency = static_cast<int32_t>(prompts.size()), .kv_dtype = kv_dtype, .backend = backend,
                  .devices = std::move(devices), .threads = 2, .tp = tp, .greedy = true};
  o.step_graphs = step_graphs;
  if (drafter) {
    o.drafter = drafter;
    o.draft_tokens = draft_tokens;
  }
  Engine e(a, c, o);
  std::vector<std::shared_ptr<Collector>> ws;
  for (const auto& p : prompts) {
    EngineRequest r;
    r.prompt = p;
    r.sampling.greedy = true;
    r.max_tokens = max_tokens;
    ws.push_back(std::make_shared<Collector>());
    EXPECT_TRUE(e.submit(r, ws.back()).accepted());
  }
  GreedyRun out;
  for (auto& w : ws) {
    w->wait();
    EXPECT_NE(w->result.reason, FinishReason::kError) << w->result.error;
    out.outputs.push_back(w->tokens);
    out.results.push_back(w->result);
  }
  out.stats = e.stats();
  return out;
}

}  // namespace ninfer::testing
