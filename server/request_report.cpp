#include "server/request_report.h"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>

namespace ninfer::server {

using json = nlohmann::json;

namespace {

template <typename J = json>
J opt(const std::optional<double>& v) { return v ? J(*v) : J(nullptr); }

template <typename J = json>
J spec_json(const SpecStats& s) {
  J j = {{"method", s.method},
            {"draft_tokens", s.draft_tokens},
            {"steps", s.steps},
            {"drafted", s.drafted},
            {"accepted", s.accepted},
            {"acceptance_rate", s.drafted > 0 ? J(static_cast<double>(s.accepted) / s.drafted) : J(nullptr)},
            {"mean_acceptance_length", s.steps > 0 ? J(1.0 + static_cast<double>(s.accepted) / s.steps) : J(nullptr)},
            {"accepted_per_pos", s.accepted_per_pos},
            {"head", s.head}};
  return j;
}

}  // namespace

std::optional<double> prefill_tok_s(const FinalResult& r) {
  if (r.timings.prefill_s <= 0) return std::nullopt;
  return static_cast<double>(r.prompt_tokens - r.cached_tokens) / r.timings.prefill_s;
}

std::optional<double> decode_tok_s(const FinalResult& r) {
  if (r.timings.decode_s <= 0 || r.completion_tokens < 2) return std::nullopt;
  return static_cast<double>(r.completion_tokens - 1) / r.timings.decode_s;
}

nlohmann::ordered_json timings_json(const FinalResult& r) {
  using oj = nlohmann::ordered_json;
  const Timings& t = r.timings;
  const int64_t prompt_n = r.prompt_tokens - r.cached_tokens;
  const double prompt_ms = t.prefill_s * 1e3;
  const double predicted_ms = t.decode_s * 1e3;
  oj j = {
      {"queue_s", t.queue_s},
      {"prefill_s", t.prefill_s},
      {"decode_s", t.decode_s},
      {"ttft_s", t.ttft_s},
      {"total_s", t.total_s},
      {"prefill_tok_s", opt<oj>(prefill_tok_s(r))},
      {"decode_tok_s", opt<oj>(decode_tok_s(r))},
      {"stop_reason", stop_reason_name(r.stop_reason)},
      // llama.cpp names
      {"cache_n", r.cached_tokens},
      {"prompt_n", prompt_n},
      {"prompt_ms", prompt_ms},
      {"prompt_per_token_ms", prompt_n > 0 ? oj(prompt_ms / prompt_n) : oj(nullptr)},
      {"prompt_per_second", prompt_ms > 0 ? oj(prompt_n * 1e3 / prompt_ms) : oj(nullptr)},
      {"predicted_n", r.completion_tokens},
      {"predicted_ms", predicted_ms},
      {"predicted_per_token_ms",
       r.completion_tokens > 0 ? oj(predicted_ms / r.completion_tokens) : oj(nullptr)},
      {"predicted_per_second",
       predicted_ms > 0 ? oj(r.completion_tokens * 1e3 / predicted_ms) : oj(nullptr)},
  };
  if (r.spec) {
    j["draft_n"] = r.spec->drafted;
    j["draft_n_accepted"] = r.spec->accepted;
    j["spec"] = spec_json<oj>(*r.spec);
  }
  return j;
}

FinalResult merge_choice_results(const std::vector<FinalResult>& choices, double request_s) {
  if (choices.empty()) return {};
  FinalResult m = choices.front();
  if (choices.size() > 1 && request_s > 0) m.timings.total_s = request_s;
  for (size_t i = 1; i < choices.size(); ++i) {
    const FinalResult& c = choices[i];
    m.completion_tokens += c.completion_tokens;
    m.reasoning_tokens += c.reasoning_tokens;
    m.timings.decode_s = std::max(m.timings.decode_s, c.timings.decode_s);
    m.timings.total_s = std::max(m.timings.total_s, c.timings.total_s);
    if (c.stop_reason == StopReason::kError && m.stop_reason != StopReason::kError) {
      m.stop_reason = StopReason::kError;
      m.error = c.error;
      m.stop_string.clear();
    } else if (c.stop_reason == StopReason::kCancelled && m.stop_reason != StopReason::kError) {
      m.stop_reason = StopReason::kCancelled;
      m.stop_string.clear();
    }
    if (c.spec && m.spec) {
      m.spec->steps += c.spec->steps;
      m.spec->drafted += c.spec->drafted;
      m.spec->accepted += c.spec->accepted;
      if (m.spec->accepted_per_pos.size() < c.spec->accepted_per_pos.size())
        m.spec->accepted_per_pos.resize(c.spec->accepted_per_pos.size(), 0);
      for (size_t p = 0; p < c.spec->accepted_per_pos.size(); ++p) m.spec->accepted_per_pos[p] += c.spec->accepted_per_pos[p];
    }
  }
  return m;
}

std::string iso8601_utc(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
#ifdef _WIN32
  gmtime_s(&tm, &secs);
#else
  gmtime_r(&secs, &tm);
#endif
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
}

nlohmann::ordered_json jsonl_record(const RequestRecord& rec) {
  using oj = nlohmann::ordered_json;
  const FinalResult& r = rec.result;
  const Timings& t = r.timings;
  oj j = {
      {"ts", iso8601_utc(rec.finished_at)},
      {"request_id", rec.request_id},
      {"model", rec.model},
      {"endpoint", rec.endpoint},
      {"stream", rec.stream},
      {"http_status", rec.http_status},
      {"max_tokens", rec.max_tokens ? oj(*rec.max_tokens) : oj(nullptr)},
      {"prompt_tokens", r.prompt_tokens},
      {"completion_tokens", r.completion_tokens},
      {"reasoning_tokens", r.reasoning_tokens},
      {"cached_tokens", r.cached_tokens},
      {"finish_reason", finish_reason_name(r.stop_reason)},
      {"stop_reason", stop_reason_name(r.stop_reason)},
      {"empty_content", rec.empty_content},
      {"timings",
       {{"queue_s", t.queue_s},
        {"prefill_s", t.prefill_s},
        {"decode_s", t.decode_s},
        {"ttft_s", t.ttft_s},
        {"total_s", t.total_s}}},
      {"prefill_tok_s", opt<oj>(prefill_tok_s(r))},
      {"decode_tok_s", opt<oj>(decode_tok_s(r))},
      {"settings",
       {{"kv_dtype", rec.settings.kv_dtype},
        {"prefill_chunk", rec.settings.prefill_chunk},
        {"max_context", rec.settings.max_context},
        {"kv_capacity", rec.settings.kv_capacity},
        {"prefix_reuse", rec.settings.prefix_reuse},
        {"tp", rec.settings.tp},
        {"max_concurrency", rec.settings.max_concurrency}}},
  };
  if (r.spec) j["spec"] = spec_json<oj>(*r.spec);
  if (r.stop_reason == StopReason::kStopString) j["stop_string"] = r.stop_string;
  if (!r.error.empty()) j["error"] = r.error;
  if (!rec.user.empty()) j["user"] = rec.user;
  if (!rec.choices.empty()) {  // n > 1: the figures above are merged, each choice's own are here
    j["n"] = rec.choices.size();
    oj list = oj::array();
    for (size_t i = 0; i < rec.choices.size(); ++i) {
      const FinalResult& c = rec.choices[i];
      oj e = {{"index", i},
              {"completion_tokens", c.completion_tokens},
              {"reasoning_tokens", c.reasoning_tokens},
              {"cached_tokens", c.cached_tokens},
              {"finish_reason", finish_reason_name(c.stop_reason)},
              {"stop_reason", stop_reason_name(c.stop_reason)},
              {"timings",
               {{"queue_s", c.timings.queue_s},
                {"prefill_s", c.timings.prefill_s},
                {"decode_s", c.timings.decode_s},
                {"ttft_s", c.timings.ttft_s},
                {"total_s", c.timings.total_s}}},
              {"decode_tok_s", opt<oj>(decode_tok_s(c))}};
      if (c.stop_reason == StopReason::kStopString) e["stop_string"] = c.stop_string;
      if (!c.error.empty()) e["error"] = c.error;
      list.push_back(std::move(e));
    }
    j["choices"] = std::move(list);
  }
  return j;
}

}  // namespace ninfer::server
