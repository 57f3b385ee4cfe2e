#include "server/metrics.h"

#include <algorithm>

#include <fmt/format.h>

#include "server/jsonl_log.h"

namespace ninfer::server {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {
  std::sort(bounds_.begin(), bounds_.end());
}

void Histogram::observe(double value) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  counts_[i]++;
  sum_ += value;
  count_++;
}

namespace {

// vLLM's buckets for the same series.
std::vector<double> ttft_buckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
          2.5,   5.0,   7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
}
std::vector<double> latency_buckets() {
  return {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
          120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}
std::vector<double> itl_buckets() {
  return {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
}
std::vector<double> token_buckets() {
  return {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000};
}

std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

class Writer {
 public:
  explicit Writer(const std::string& model) : model_label_("model_name=\"" + escape_label(model) + "\"") {}

  void header(const char* name, const char* type, const char* help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void sample(const char* name, double value, const std::string& extra_labels = {}) {
    out_ += fmt::format("{}{{{}{}}} {}\n", name, extra_labels.empty() ? "" : extra_labels + ",", model_label_,
                        value);
  }
  void scalar(const char* name, const char* type, const char* help, double value) {
    header(name, type, help);
    sample(name, value);
  }
  void histogram(const char* name, const char* help, const Histogram& h) {
    header(name, "histogram", help);
    uint64_t cum = 0;
    for (size_t i = 0; i < h.bounds().size(); ++i) {
      cum += h.counts()[i];
      out_ += fmt::format("{}_bucket{{le=\"{}\",{}}} {}\n", name, h.bounds()[i], model_label_, cum);
    }
    cum += h.counts().back();
    out_ += fmt::format("{}_bucket{{le=\"+Inf\",{}}} {}\n", name, model_label_, cum);
    out_ += fmt::format("{}_sum{{{}}} {}\n", name, model_label_, h.sum());
    out_ += fmt::format("{}_count{{{}}} {}\n", name, model_label_, h.count());
  }
  // A counter with one sample per entry of `values`, labelled `label="<key>"`.
  template <typename Map>
  void labelled(const char* name, const char* help, const char* label, const Map& values) {
    header(name, "counter", help);
    for (const auto& [key, n] : values) sample(name, static_cast<double>(n), fmt::format("{}=\"{}\"", label, key));
  }
  std::string take() { return std::move(out_); }

 private:
  std::string model_label_;
  std::string out_;
};

}  // namespace

ServerMetrics::ServerMetrics()
    : ttft_(ttft_buckets()),
      e2e_(latency_buckets()),
      queue_(latency_buckets()),
      prefill_(latency_buckets()),
      decode_(latency_buckets()),
      itl_(itl_buckets()),
      tpot_(itl_buckets()),
      prompt_len_(token_buckets()),
      generation_len_(token_buckets()) {
  for (const char* r : {"stop", "length", "abort", "error"}) finished_[r] = 0;
}

void ServerMetrics::record_finished(const FinalResult& r) {
  std::lock_guard<std::mutex> lock(mu_);
  finished_[std::string(finish_reason_name(r.stop_reason))]++;
  stop_reasons_[std::string(stop_reason_name(r.stop_reason))]++;
  prompt_tokens_ += static_cast<uint64_t>(r.prompt_tokens);
  cached_tokens_ += static_cast<uint64_t>(r.cached_tokens);
  generation_tokens_ += static_cast<uint64_t>(r.completion_tokens);
  reasoning_tokens_ += static_cast<uint64_t>(r.reasoning_tokens);
  e2e_.observe(r.timings.total_s);
  queue_.observe(r.timings.queue_s);
  prompt_len_.observe(static_cast<double>(r.prompt_tokens));
  generation_len_.observe(static_cast<double>(r.completion_tokens));
  if (r.completion_tokens > 0) {
    ttft_.observe(r.timings.ttft_s);
    prefill_.observe(r.timings.prefill_s);
    decode_.observe(r.timings.decode_s);
  }
  if (r.completion_tokens > 1) tpot_.observe(r.timings.decode_s / static_cast<double>(r.completion_tokens - 1));
  if (r.spec) {
    spec_drafts_ += static_cast<uint64_t>(r.spec->steps);
    spec_draft_tokens_ += static_cast<uint64_t>(r.spec->drafted);
    spec_accepted_ += static_cast<uint64_t>(r.spec->accepted);
    if (spec_accepted_per_pos_.size() < r.spec->accepted_per_pos.size())
      spec_accepted_per_pos_.resize(r.spec->accepted_per_pos.size(), 0);
    for (size_t i = 0; i < r.spec->accepted_per_pos.size(); ++i)
      spec_accepted_per_pos_[i] += static_cast<uint64_t>(r.spec->accepted_per_pos[i]);
  }
}

void ServerMetrics::record_token_gap(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  itl_.observe(seconds);
}

void ServerMetrics::record_http_status(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  http_status_[status]++;
}

void ServerMetrics::record_rejected() {
  std::lock_guard<std::mutex> lock(mu_);
  rejected_++;
}

std::string ServerMetrics::render(const std::string& model_name, const EngineLoad& load, int64_t in_flight,
                                  const JsonlWriter* log) const {
  std::lock_guard<std::mutex> lock(mu_);
  Writer w(model_name);
  w.labelled("vllm:request_success_total", "Finished requests by finish reason.", "finished_reason", finished_);
  w.labelled("ninfer:request_stop_reason_total", "Finished requests by engine stop reason.", "stop_reason",
             stop_reasons_);
  w.scalar("ninfer:request_rejected_total", "counter", "Requests the engine refused at admission.",
           static_cast<double>(rejected_));
  w.scalar("vllm:prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
           static_cast<double>(prompt_tokens_));
  w.scalar("ninfer:prompt_cached_tokens_total", "counter", "Prompt tokens reused from the prefix cache.",
           static_cast<double>(cached_tokens_));
  w.scalar("vllm:generation_tokens_total", "counter", "Generated tokens of finished requests.",
           static_cast<double>(generation_tokens_));
  w.scalar("ninfer:reasoning_tokens_total", "counter", "Generated tokens in the reasoning channel.",
           static_cast<double>(reasoning_tokens_));
  w.histogram("vllm:time_to_first_token_seconds", "Time to first token in seconds.", ttft_);
  w.histogram("vllm:e2e_request_latency_seconds", "End-to-end request latency in seconds.", e2e_);
  w.histogram("vllm:request_queue_time_seconds", "Time requests spent waiting in the queue.", queue_);
  w.histogram("vllm:request_prefill_time_seconds", "Time requests spent in prefill.", prefill_);
  w.histogram("vllm:request_decode_time_seconds", "Time requests spent in decode.", decode_);
  w.histogram("vllm:inter_token_latency_seconds", "Time between successive outputs of a request.", itl_);
  w.histogram("vllm:request_time_per_output_token_seconds", "Decode time per output token after the first.", tpot_);
  w.histogram("vllm:request_prompt_tokens", "Prompt length of finished requests.", prompt_len_);
  w.histogram("vllm:request_generation_tokens", "Generated tokens of finished requests.", generation_len_);
  w.scalar("vllm:num_requests_running", "gauge", "Sequences being prefilled or decoded.",
           static_cast<double>(load.running));
  w.scalar("vllm:num_requests_waiting", "gauge", "Requests accepted and waiting to run (queue depth).",
           static_cast<double>(load.waiting));
  w.scalar("vllm:kv_cache_usage_perc", "gauge", "Fraction of KV blocks in use (0-1).",
           load.kv_blocks_total > 0 ? static_cast<double>(load.kv_blocks_used) / load.kv_blocks_total : 0.0);
  w.scalar("ninfer:kv_blocks_used", "gauge", "KV cache blocks in use.", static_cast<double>(load.kv_blocks_used));
  w.scalar("ninfer:kv_blocks_total", "gauge", "KV cache blocks in total.", static_cast<double>(load.kv_blocks_total));
  w.scalar("ninfer:kv_blocks_allocated", "gauge",
           "KV blocks off the free list (held by sequences or the prefix cache).",
           static_cast<double>(load.kv_blocks_allocated));
  w.scalar("ninfer:prefix_cache_blocks", "gauge", "KV blocks the prefix cache holds.",
           static_cast<double>(load.prefix_cached_blocks));
  w.scalar("ninfer:prefix_cache_snapshots", "gauge", "GDN state snapshots the prefix cache holds.",
           static_cast<double>(load.prefix_snapshots));
  w.scalar("ninfer:constrained_steps_passed_over_total", "counter",
           "Steps a structured-output request sat out while a mask worker walked its next token mask.",
           static_cast<double>(load.passed_over));
  w.scalar("ninfer:http_requests_in_flight", "gauge", "Generation requests the HTTP layer is serving.",
           static_cast<double>(in_flight));
  w.scalar("vllm:spec_decode_num_drafts_total", "counter", "Speculative drafting steps.",
           static_cast<double>(spec_drafts_));
  w.scalar("vllm:spec_decode_num_draft_tokens_total", "counter", "Drafted tokens.",
           static_cast<double>(spec_draft_tokens_));
  w.scalar("vllm:spec_decode_num_accepted_tokens_total", "counter", "Accepted drafted tokens.",
           static_cast<double>(spec_accepted_));
  std::map<size_t, uint64_t> per_pos;
  for (size_t i = 0; i < spec_accepted_per_pos_.size(); ++i) per_pos[i] = spec_accepted_per_pos_[i];
  w.labelled("vllm:spec_decode_num_accepted_tokens_per_pos_total", "Accepted drafted tokens by position.", "position",
             per_pos);
  w.labelled("ninfer:http_responses_total", "HTTP responses by status code.", "code", http_status_);
  if (log) {
    w.scalar("ninfer:jsonl_lines_written_total", "counter", "Timing lines written to --log-jsonl.",
             static_cast<double>(log->lines_written()));
    w.scalar("ninfer:jsonl_write_errors_total", "counter", "Timing lines lost: --log-jsonl could not be written.",
             static_cast<double>(log->write_errors()));
  }
  return w.take();
}

}  // namespace ninfer::server
