// Owns one benchmark request: the non-streaming chat completion sent to the server, and its line in the JSONL log.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ninfer::bench {

struct ChatRequest {
  std::string prompt;
  int64_t max_tokens = 0;
  std::string reasoning_effort;  // empty: not sent
};

struct ChatAnswer {
  int http_status = 0;          // 0 when no answer came (connection refused, timeout)
  std::string request_id;       // the response id (= the JSONL line's request_id)
  std::string content;
  std::string reasoning;
  std::string error;            // the transport error or the error object's message
  double client_s = 0;          // as the client saw it, send → whole answer
};

// POSTs /v1/chat/completions (stream false) to host:port and waits up to `timeout` for the answer.
ChatAnswer send_chat(const std::string& host, int port, const ChatRequest& request, std::chrono::seconds timeout);

// The host and port of "http://host:port" (the port defaults to 80). Throws ninfer::Error on anything else.
std::pair<std::string, int> parse_url(const std::string& url);

// Reads the JSONL file until a line has this request_id (the server writes it asynchronously after the answer);
// nothing after `timeout`. Lines that are not JSON are skipped.
std::optional<nlohmann::json> wait_jsonl_line(const std::string& path, const std::string& request_id,
                                              std::chrono::milliseconds timeout);

}  // namespace ninfer::bench
