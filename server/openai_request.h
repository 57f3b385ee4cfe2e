// Owns parsing and validation of OpenAI chat-completions and completions request bodies into typed structs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/engine_port.h"

namespace ninfer::server {

// Sampling fields shared by both endpoints; unset = the model's default.
struct SamplingFields {
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int32_t> top_k;
  std::optional<double> min_p;
  std::optional<double> presence_penalty;
  std::optional<double> frequency_penalty;
  std::optional<double> repetition_penalty;
  std::optional<uint64_t> seed;
  std::vector<std::pair<int32_t, double>> logit_bias;  // token id -> bias in [-100, 100], ids ascending
};

struct ChatCompletionRequest {
  std::optional<std::string> model;
  std::vector<ChatMessage> messages;
  std::optional<int64_t> max_tokens;      // max_completion_tokens, else max_tokens
  std::string max_tokens_field;           // which of the two set it (for error params)
  SamplingFields sampling;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;             // stream_options.include_usage
  std::optional<std::string> reasoning_effort;
  std::optional<bool> enable_thinking;    // chat_template_kwargs.enable_thinking
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs, all of them
  bool logprobs = false;
  int32_t top_logprobs = 0;
  std::string user;
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // validated function tools, as sent
  ToolChoice tool_choice;                 // default: auto with tools, none without
  ResponseFormat response_format;         // text unless response_format asks for JSON
  bool parallel_tool_calls = true;
  int32_t n = 1;                          // choices; >= 1 (the server's --max-n is checked by the HTTP layer)
};

struct CompletionRequest {
  std::optional<std::string> model;
  PromptKind prompt_kind = PromptKind::kText;  // kText or kTokens
  std::string prompt_text;
  std::vector<int32_t> prompt_tokens;
  std::optional<int64_t> max_tokens;      // OpenAI default 16 is applied by to_generation_request
  SamplingFields sampling;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;
  std::optional<int32_t> logprobs;        // completions: number of alternatives, 0..5
  std::string user;
  int32_t n = 1;                          // choices; >= 1 (the server's --max-n is checked by the HTTP layer)
};

// Throw ApiException (400 naming the field) on a wrong type, a bad value, or a field whose feature
// is not served yet (legacy functions, echo, best_of, suffix); a response_format schema
// structured output cannot constrain is refused naming the keyword.
// Unknown fields are ignored; null counts as absent. The body is ordered_json so that tool schemas and tool-call
// arguments keep their key order into the chat template (a plain json converts, with sorted keys).
ChatCompletionRequest parse_chat_request(const nlohmann::ordered_json& body);
CompletionRequest parse_completion_request(const nlohmann::ordered_json& body);

// A forced tool call (tool_choice "required" or a named function) is decoded under a grammar of the model's call
// markup, so it needs a format: throws ApiException 400 unsupported_parameter "tool_choice" when `format` is kNone.
void require_servable_tool_choice(const GenerationRequest& request, ToolCallFormat format);

// Server-wide policy applied on top of each request (from the flags).
struct RequestPolicy {
  bool force_greedy = false;               // --greedy
  std::optional<int64_t> reasoning_budget; // --reasoning-budget
};

inline constexpr int64_t kDefaultCompletionMaxTokens = 16;  // OpenAI's default for /v1/completions

GenerationRequest to_generation_request(const ChatCompletionRequest& req, const std::string& id,
                                        const SamplingParams& defaults, const RequestPolicy& policy);
GenerationRequest to_generation_request(const CompletionRequest& req, const std::string& id,
                                        const SamplingParams& defaults, const RequestPolicy& policy);

}  // namespace ninfer::server
