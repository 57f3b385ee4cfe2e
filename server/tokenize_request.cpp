#include "server/tokenize_request.h"

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/openai_request.h"

namespace ninfer::server {

using json = nlohmann::ordered_json;

namespace {

[[noreturn]] void refuse(std::string message, std::string param, std::string code = "invalid_value") {
  throw ApiException(bad_request(std::move(message), std::move(param), std::move(code)));
}

}  // namespace

GenerationRequest parse_tokenize_request(const json& body) {
  if (!body.is_object()) refuse("The request body must be a JSON object.", "body", "invalid_type");
  GenerationRequest g;
  if (body.contains("messages") && !body["messages"].is_null()) {
    if (body.contains("prompt") || body.contains("content"))
      refuse("Send either 'messages' or a 'prompt' ('content'), not both.", "messages");
    // The chat fields are read as chat completions reads them (messages, tools, chat_template_kwargs).
    const ChatCompletionRequest r = parse_chat_request(body);
    g = to_generation_request(r, "tokenize", SamplingParams{}, RequestPolicy{});
    g.kind = PromptKind::kChat;
    if (body.contains("add_generation_prompt") && !body["add_generation_prompt"].is_null()) {
      if (!body["add_generation_prompt"].is_boolean())
        refuse("'add_generation_prompt' must be a boolean.", "add_generation_prompt", "invalid_type");
      g.add_generation_prompt = body["add_generation_prompt"].get<bool>();
    }
    return g;
  }
  for (const char* field : {"prompt", "content"}) {
    if (!body.contains(field) || body[field].is_null()) continue;
    if (!body[field].is_string()) refuse(fmt::format("'{}' must be a string.", field), field, "invalid_type");
    g.kind = PromptKind::kText;
    g.prompt_text = body[field].get<std::string>();
    return g;
  }
  refuse("Send 'prompt' (or 'content') with the text, or 'messages' with a conversation.", "prompt",
         "missing_required_parameter");
}

json tokenize_response(const std::vector<int32_t>& ids, int64_t max_context) {
  return {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", max_context}};
}

std::vector<int32_t> parse_detokenize_request(const json& body) {
  if (!body.is_object()) refuse("The request body must be a JSON object.", "body", "invalid_type");
  if (!body.contains("tokens") || body["tokens"].is_null())
    refuse("'tokens' (an array of token ids) is required.", "tokens", "missing_required_parameter");
  const json& t = body["tokens"];
  if (!t.is_array()) refuse("'tokens' must be an array of token ids.", "tokens", "invalid_type");
  std::vector<int32_t> ids;
  ids.reserve(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    if (!t[i].is_number_integer() || t[i].get<int64_t>() < 0 || t[i].get<int64_t>() > INT32_MAX)
      refuse(fmt::format("tokens[{}] is not a token id (a non-negative integer).", i), fmt::format("tokens[{}]", i));
    ids.push_back(static_cast<int32_t>(t[i].get<int64_t>()));
  }
  return ids;
}

json detokenize_response(const std::string& text) { return {{"prompt", text}, {"content", text}}; }

}  // namespace ninfer::server
