// Owns the OpenAI response and stream-chunk JSON: chat.completion(.chunk), text_completion, usage, models.
// Objects keep OpenAI's key order (id, object, created, model, choices, usage), as people read them too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/engine_port.h"

namespace ninfer::server {

// Fields every object of one response repeats.
struct ResponseHead {
  std::string id;       // chatcmpl-… / cmpl-…
  int64_t created = 0;  // unix seconds
  std::string model;    // the served model name
};

// The whole output of a request, collected from its deltas.
struct CollectedOutput {
  std::string content;
  std::string reasoning;
  std::vector<TokenLogprob> logprobs;  // every output token, in order, when requested

  void add(const Delta& d);
};

std::string system_fingerprint();

// usage {prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details.cached_tokens,
//        completion_tokens_details.reasoning_tokens}
nlohmann::ordered_json usage_json(const FinalResult& r);

// Non-streaming responses. `finish_reason` is stop | length (cancel/error never reach a 200).
nlohmann::ordered_json chat_completion_json(const ResponseHead& head, const CollectedOutput& out,
                                    const FinalResult& r, bool logprobs);
nlohmann::ordered_json completion_json(const ResponseHead& head, const CollectedOutput& out,
                               const FinalResult& r, bool logprobs);

// Chat stream chunks: the first one carries the role, then one per delta, then the finish chunk,
// then (stream_options.include_usage) the usage chunk with `choices: []`. `timings` rides on the
// last chunk sent. `usage_field` adds "usage": null to non-usage chunks (OpenAI does so when
// include_usage is set).
nlohmann::ordered_json chat_role_chunk(const ResponseHead& head, bool usage_field);
// Empty when the delta has nothing to show (no text, no logprobs).
std::vector<nlohmann::ordered_json> chat_delta_chunks(const ResponseHead& head, const Delta& d, bool logprobs,
                                              bool usage_field);
nlohmann::ordered_json chat_finish_chunk(const ResponseHead& head, const FinalResult& r, bool usage_field,
                                 bool with_timings);
nlohmann::ordered_json usage_chunk(const ResponseHead& head, const char* object, const FinalResult& r);

// Completions stream chunks.
// `text_offset`: bytes of text streamed before this delta (for logprobs.text_offset).
std::vector<nlohmann::ordered_json> completion_delta_chunks(const ResponseHead& head, const Delta& d,
                                                    bool logprobs, bool usage_field, size_t text_offset);
nlohmann::ordered_json completion_finish_chunk(const ResponseHead& head, const FinalResult& r, bool usage_field,
                                       bool with_timings);

// GET /v1/models and /v1/models/{id}
nlohmann::ordered_json model_json(const std::string& id, int64_t created);
nlohmann::ordered_json models_json(const std::string& id, int64_t created, int64_t max_context);

// Chat logprobs {"content":[{token, logprob, bytes, top_logprobs:[…]}], "refusal": null}
nlohmann::ordered_json chat_logprobs_json(const std::vector<TokenLogprob>& lps);
// Completions logprobs {"tokens", "token_logprobs", "top_logprobs", "text_offset"}
nlohmann::ordered_json completion_logprobs_json(const std::vector<TokenLogprob>& lps, size_t text_offset);

}  // namespace ninfer::server
