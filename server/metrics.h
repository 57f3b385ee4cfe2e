// Owns the server's Prometheus metrics: counters and histograms fed per request, rendered as text.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "server/engine_port.h"

namespace ninfer::server {

class JsonlWriter;

// Fixed-bucket histogram (Prometheus semantics: cumulative `le` buckets, +Inf, sum, count).
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);

  const std::vector<double>& bounds() const { return bounds_; }
  const std::vector<uint64_t>& counts() const { return counts_; }  // per bucket, not cumulative; last = +Inf
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Names follow vLLM where vLLM has the series (so `vllm bench serve` and its dashboards read them);
// ninfer:* for the rest. Every method is thread-safe and cheap (one short lock).
class ServerMetrics {
 public:
  ServerMetrics();

  void record_finished(const FinalResult& r);  // a request the engine finished (any stop reason)
  void record_token_gap(double seconds);       // time between two output deltas of one request
  void record_http_status(int status);         // every HTTP response
  void record_rejected();                      // a request the engine refused at submit

  // The text exposition (format 0.0.4). `in_flight`: generation requests the HTTP layer holds; `log`: the
  // JSONL writer (its written and lost line counts), null without --log-jsonl.
  std::string render(const std::string& model_name, const EngineLoad& load, int64_t in_flight,
                     const JsonlWriter* log = nullptr) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> finished_;   // finished_reason → count
  std::map<std::string, uint64_t> stop_reasons_;
  std::map<int, uint64_t> http_status_;
  uint64_t rejected_ = 0;
  uint64_t prompt_tokens_ = 0;
  uint64_t cached_tokens_ = 0;
  uint64_t generation_tokens_ = 0;
  uint64_t reasoning_tokens_ = 0;
  uint64_t spec_drafts_ = 0;
  uint64_t spec_draft_tokens_ = 0;
  uint64_t spec_accepted_ = 0;
  std::vector<uint64_t> spec_accepted_per_pos_;
  Histogram ttft_;
  Histogram e2e_;
  Histogram queue_;
  Histogram prefill_;
  Histogram decode_;
  Histogram itl_;
  Histogram tpot_;
  Histogram prompt_len_;
  Histogram generation_len_;
};

}  // namespace ninfer::server
