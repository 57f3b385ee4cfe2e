// Owns the spec tests' engine harness: run a set of requests through an Engine (with or without a drafter) and
// collect every output token (with logprobs), result and the engine's stats.
#pragma once

#include <memory>
#include <random>
#include <vector>

#include "engine/runtime/engine.h"
#include "tests/model/reference_model.h"
#include "tests/support/request_collector.h"

namespace ninfer::testing {

inline const std::string kTinyArtifact = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";

// Collector that also keeps the full OutputToken (logprobs) of every token.
class FullCollector : public Collector {
 public:
  void on_tokens(std::span<const OutputToken> t) override {
    {
      std::lock_guard lock(full_mu_);
      full.insert(full.end(), t.begin(), t.end());
    }
    Collector::on_tokens(t);
  }
  std::vector<OutputToken> full;

 private:
  std::mutex full_mu_;
};

struct EngineRun {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<OutputToken>> outputs;
  std::vector<RequestResult> results;
  EngineStats stats;
};

// Submits every request at once (they run concurrently up to max_concurrency) and waits for all.
inline EngineRun run_engine(const ReferenceModel& m, const EngineOptions& o, const std::vector<EngineRequest>& reqs) {
  Engine engine(*m.artifact, m.config, o);
  std::vector<std::shared_ptr<FullCollector>> cs;
  for (const auto& r : reqs) {
    auto c = std::make_shared<FullCollector>();
    auto out = engine.submit(r, c);
    EXPECT_TRUE(out.accepted()) << out.message;
    cs.push_back(c);
  }
  EngineRun run;
  for (auto& c : cs) {
    c->wait();
    run.tokens.push_back(c->tokens);
    run.outputs.push_back(c->full);
    run.results.push_back(c->result);
  }
  run.stats = engine.stats();
  return run;
}

inline std::vector<int32_t> random_prompt(size_t n, int32_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> p(n);
  for (auto& t : p) t = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab));
  return p;
}

inline std::vector<EngineRequest> greedy_requests(const std::vector<std::vector<int32_t>>& prompts, int64_t max_tokens) {
  std::vector<EngineRequest> reqs;
  for (const auto& p : prompts) {
    EngineRequest r;
    r.prompt = p;
    r.sampling.greedy = true;
    r.max_tokens = max_tokens;
    reqs.push_back(r);
  }
  return reqs;
}

// Prompt + output of every request: what an oracle drafter is told.
inline std::vector<std::vector<int32_t>> truths(const std::vector<EngineRequest>& reqs, const EngineRun& run) {
  std::vector<std::vector<int32_t>> t;
  for (size_t i = 0; i < reqs.size(); ++i) {
    t.push_back(reqs[i].prompt);
    t.back().insert(t.back().end(), run.tokens[i].begin(), run.tokens[i].end());
  }
  return t;
}

}  // namespace ninfer::testing
