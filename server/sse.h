// Owns the server-sent-events wire format of streamed responses (data events, [DONE], keep-alive comments).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ninfer::server {

inline constexpr const char* kSseContentType = "text/event-stream; charset=utf-8";

// "data: <compact json>\n\n". The JSON dump never contains a raw newline (strings escape them).
std::string sse_data(const nlohmann::json& payload);
std::string sse_data(const nlohmann::ordered_json& payload);
// "data: [DONE]\n\n", the end of every OpenAI stream.
std::string sse_done();
// ": <text>\n\n", a comment line clients ignore; sent while the engine is silent so a client that
// went away is noticed (the write fails) and proxies keep the connection open.
std::string sse_comment(std::string_view text);

}  // namespace ninfer::server
