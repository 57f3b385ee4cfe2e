// Owns the OpenAI response and stream-chunk JSON: chat.completion(.chunk), text_completion, usage, models.
// Objects keep OpenAI's key order (id, object, created, model, choices, usage), as people read them too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/engine_port.h"
#include "server/tool_call_parser.h"

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
  std::vector<ToolCall> tool_calls;    // parsed out of the content (the content keeps the rest)
  bool with_token_ids = false;         // a model without a tokenizer: the choice lists its output ids
  std::vector<int32_t> token_ids;      // the deltas' token_ids, in order

  void add(const Delta& d);
};

// OpenAI's chat finish_reason: "tool_calls" when the answer holds calls and the model ended it (EOS), else
// finish_reason_name(): stop | length.
std::string_view chat_finish_reason(const FinalResult& r, bool has_tool_calls);

std::string system_fingerprint();

// usage {prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details.cached_tokens,
//        completion_tokens_details.reasoning_tokens}
nlohmann::ordered_json usage_json(const FinalResult& r);

// Non-streaming responses. A completions choice of an output with_token_ids has "token_ids": [ids]. `finish_reason` is stop | length | tool_calls (cancel/error never reach a 200).
// With tool calls, message.tool_calls is [{id, type: "function", function: {name, arguments}}] and content is
// null when no text is left.
nlohmann::ordered_json chat_completion_json(const ResponseHead& head, const CollectedOutput& out,
                                    const FinalResult& r, bool logprobs);
nlohmann::ordered_json completion_json(const ResponseHead& head, const CollectedOutput& out,
                               const FinalResult& r, bool logprobs);

// One choice of an n-choice response: its output and its own result (finish_reason).
struct ChoiceOutput {
  CollectedOutput out;
  FinalResult result;
};
// n choices, choices[i].index = i; usage and timings from `total` (merge_choice_results()).
nlohmann::ordered_json chat_completion_json(const ResponseHead& head, const std::vector<ChoiceOutput>& choices,
                                    const FinalResult& total, bool logprobs);
nlohmann::ordered_json completion_json(const ResponseHead& head, const std::vector<ChoiceOutput>& choices,
                               const FinalResult& total, bool logprobs);

// Chat stream chunks: the first one carries the role, then one per delta, then the finish chunk,
// then (stream_options.include_usage) the usage chunk with `choices: []`. `timings` rides on the
// last chunk sent. `usage_field` adds "usage": null to non-usage chunks (OpenAI does so when
// include_usage is set). `index` is the choice a chunk belongs to (n > 1: each choice has its own role, delta and
// finish chunks; one usage chunk ends the stream).
nlohmann::ordered_json chat_role_chunk(const ResponseHead& head, bool usage_field, int index = 0);
// Empty when the delta has nothing to show (no text, no logprobs).
std::vector<nlohmann::ordered_json> chat_delta_chunks(const ResponseHead& head, const Delta& d, bool logprobs,
                                              bool usage_field, int index = 0);
// Tool-call events as chunks: {delta: {tool_calls: [{index, id, type, function: {name, arguments: ""}}]}} on a
// call's start, then {delta: {tool_calls: [{index, function: {arguments: fragment}}]}}.
std::vector<nlohmann::ordered_json> chat_tool_call_chunks(const ResponseHead& head,
                                                  const std::vector<ToolCallEvent>& events, bool usage_field,
                                                  int index = 0);
// A content delta and the tool-call events the parser made of it, in the order of the text: content before a call,
// the call's chunks, content after it. The delta's logprobs ride on its first chunk.
std::vector<nlohmann::ordered_json> chat_output_chunks(const ResponseHead& head, const Delta& d,
                                               const std::vector<ToolCallEvent>& events, bool logprobs,
                                               bool usage_field, int index = 0);
nlohmann::ordered_json chat_finish_chunk(const ResponseHead& head, const FinalResult& r, bool usage_field,
                                 bool with_timings, bool has_tool_calls = false, int index = 0);
nlohmann::ordered_json usage_chunk(const ResponseHead& head, const char* object, const FinalResult& r);

// Completions stream chunks. A delta with token_ids (a model without a tokenizer) gets a chunk with "token_ids".
// `text_offset`: bytes of text streamed before this delta (for logprobs.text_offset).
std::vector<nlohmann::ordered_json> completion_delta_chunks(const ResponseHead& head, const Delta& d,
                                                    bool logprobs, bool usage_field, size_t text_offset,
                                                    int index = 0);
nlohmann::ordered_json completion_finish_chunk(const ResponseHead& head, const FinalResult& r, bool usage_field,
                                       bool with_timings, int index = 0);

// GET /v1/models and /v1/models/{id}
nlohmann::ordered_json model_json(const std::string& id, int64_t created);
nlohmann::ordered_json models_json(const std::string& id, int64_t created, int64_t max_context);

// Chat logprobs {"content":[{token, logprob, bytes, top_logprobs:[…]}], "refusal": null}
nlohmann::ordered_json chat_logprobs_json(const std::vector<TokenLogprob>& lps);
// Completions logprobs {"tokens", "token_logprobs", "top_logprobs", "text_offset"}
nlohmann::ordered_json completion_logprobs_json(const std::vector<TokenLogprob>& lps, size_t text_offset);

}  // namespace ninfer::server
