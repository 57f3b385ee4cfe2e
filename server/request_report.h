// Owns the per-request figures: the response `timings` extension and the JSONL timing line (docs/api.md).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/engine_port.h"

namespace ninfer::server {

// (prompt_tokens − cached_tokens) / prefill_s; unset when prefill_s is 0.
std::optional<double> prefill_tok_s(const FinalResult& r);
// (completion_tokens − 1) / decode_s; unset when decode_s is 0 or fewer than two tokens.
std::optional<double> decode_tok_s(const FinalResult& r);

// The `timings` object of responses: the JSONL figures plus llama.cpp's names (prompt_n, cache_n,
// prompt_ms, prompt_per_token_ms, prompt_per_second, predicted_n, predicted_ms,
// predicted_per_token_ms, predicted_per_second, draft_n, draft_n_accepted when speculating).
nlohmann::ordered_json timings_json(const FinalResult& r);

// A request's n choices as one result, for usage, the JSONL line and the response timings: the prompt counted once
// (prompt_tokens and cached_tokens of choice 0), completion and reasoning tokens summed; queue_s, prefill_s and ttft_s
// of choice 0 (the later choices may start after its first token), decode_s the longest, total_s `request_s` when
// > 0 (the request's wall time: the engine times each choice from its own submission), else the longest; the stop
// reason of choice 0 unless a choice failed (kError, its error) or was cancelled (kCancelled); speculation counts
// summed. One choice: itself.
FinalResult merge_choice_results(const std::vector<FinalResult>& choices, double request_s = 0);

// Everything one JSONL line says about a finished (or failed, or cancelled) request.
struct RequestRecord {
  std::chrono::system_clock::time_point finished_at;
  std::string request_id;
  std::string model;
  std::string endpoint;                 // chat.completions | completions
  bool stream = false;
  std::optional<int64_t> max_tokens;
  FinalResult result;                   // merge_choice_results() of the choices
  std::vector<FinalResult> choices;     // n > 1: each choice's own result (the line's "choices" array)
  bool empty_content = false;           // no content text (the budget went to reasoning, or nothing)
  int http_status = 200;                // what the client got (0 when it went away mid-stream)
  EngineSettings settings;
  std::string user;
};

// Keys in the documented order (ts first), for people reading the log.
nlohmann::ordered_json jsonl_record(const RequestRecord& record);

// ISO-8601 UTC with milliseconds: 2026-10-19T19:03:43.123Z
std::string iso8601_utc(std::chrono::system_clock::time_point t);

}  // namespace ninfer::server
