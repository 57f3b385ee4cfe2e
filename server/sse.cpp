#include "server/sse.h"

namespace ninfer::server {

std::string sse_data(const nlohmann::json& payload) {
  // error_handler_t::replace: engine text that is not valid UTF-8 must not abort the stream.
  return "data: " + payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}

std::string sse_data(const nlohmann::ordered_json& payload) {
  return "data: " + payload.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n\n";
}

std::string sse_done() { return "data: [DONE]\n\n"; }

std::string sse_comment(std::string_view text) {
  std::string s = ": ";
  for (char c : text) s += (c == '\n' || c == '\r') ? ' ' : c;
  s += "\n\n";
  return s;
}

}  // namespace ninfer::server
