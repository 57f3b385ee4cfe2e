#include "bench/serving/chat_client.h"

#include <fstream>
#include <thread>

#include <httplib.h>

#include "engine/core/error.h"

namespace ninfer::bench {

using json = nlohmann::json;

ChatAnswer send_chat(const std::string& host, int port, const ChatRequest& request, std::chrono::seconds timeout) {
  json body = {{"messages", {{{"role", "user"}, {"content", request.prompt}}}},
               {"max_tokens", request.max_tokens},
               {"stream", false}};
  if (!request.reasoning_effort.empty()) body["reasoning_effort"] = request.reasoning_effort;
  httplib::Client cli(host, port);
  cli.set_connection_timeout(10, 0);
  cli.set_read_timeout(static_cast<time_t>(timeout.count()), 0);
  cli.set_write_timeout(60, 0);
  ChatAnswer a;
  const auto t0 = std::chrono::steady_clock::now();
  auto res = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  a.client_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!res) {
    a.error = "no answer: " + httplib::to_string(res.error());
    return a;
  }
  a.http_status = res->status;
  a.request_id = res->get_header_value("X-Request-Id");
  const json j = json::parse(res->body, nullptr, false);
  if (j.is_discarded()) {
    a.error = "the answer is not JSON: " + res->body.substr(0, 200);
    return a;
  }
  if (j.contains("error")) a.error = j["error"].value("message", j["error"].dump());
  if (j.contains("id") && j["id"].is_string()) a.request_id = j["id"].get<std::string>();
  if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
    const json& m = j["choices"][0].value("message", json::object());
    if (m.contains("content") && m["content"].is_string()) a.content = m["content"].get<std::string>();
    if (m.contains("reasoning_content") && m["reasoning_content"].is_string())
      a.reasoning = m["reasoning_content"].get<std::string>();
  }
  return a;
}

std::pair<std::string, int> parse_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0)
    fail(ErrorKind::kInvalidArgument, "url '{}': only http://host[:port] is supported", url);
  std::string rest = url.substr(scheme.size());
  if (const size_t slash = rest.find('/'); slash != std::string::npos) rest = rest.substr(0, slash);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return {rest, 80};
  try {
    return {rest.substr(0, colon), std::stoi(rest.substr(colon + 1))};
  } catch (const std::exception&) {
    fail(ErrorKind::kInvalidArgument, "url '{}': the port is not a number", url);
  }
}

std::optional<json> wait_jsonl_line(const std::string& path, const std::string& request_id,
                                    std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.find(request_id) == std::string::npos) continue;
      json j = json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.value("request_id", "") == request_id) return j;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace ninfer::bench
