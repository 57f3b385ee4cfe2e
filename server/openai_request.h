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
  bool logprobs = false;
  int32_t top_logprobs = 0;
  std::string user;
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
};

// Throw ApiException (400 naming the field) on a wrong type, a bad value, or a field whose feature
// is not served yet (n > 1, tools, non-text response_format, logit_bias, echo, best_of, suffix).
// Unknown fields are ignored; null counts as absent.
ChatCompletionRequest parse_chat_request(const nlohmann::json& body);
CompletionRequest parse_completion_request(const nlohmann::json& body);

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
