// Owns the /tokenize and /detokenize bodies (vLLM's and llama.cpp's shapes): parsing into what the engine port
// tokenizes, and the answers.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/engine_port.h"

namespace ninfer::server {

// POST /tokenize: {"prompt": text} or {"content": text} (llama.cpp), or {"messages": [...], "tools"?,
// "add_generation_prompt"? (default true), "chat_template_kwargs"?} (the chat template applied as for chat
// completions). Throws ApiException (400) naming the field.
GenerationRequest parse_tokenize_request(const nlohmann::ordered_json& body);
// {"tokens": [...], "count": n, "max_model_len": context}
nlohmann::ordered_json tokenize_response(const std::vector<int32_t>& ids, int64_t max_context);

// POST /detokenize: {"tokens": [ids]}. Throws ApiException (400) naming the field.
std::vector<int32_t> parse_detokenize_request(const nlohmann::ordered_json& body);
// {"prompt": text, "content": text}: vLLM reads "prompt", llama.cpp "content".
nlohmann::ordered_json detokenize_response(const std::string& text);

}  // namespace ninfer::server
