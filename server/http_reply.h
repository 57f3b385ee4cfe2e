// Owns writing JSON bodies and OpenAI error bodies into an httplib response (one content type, one place).
#pragma once

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace ninfer::server {

// The charset is spelled out: Windows PowerShell 5.1 decodes a body without it as Latin-1.
inline constexpr const char* kJsonContentType = "application/json; charset=utf-8";

inline void send_json(httplib::Response& res, const nlohmann::ordered_json& body, int status = 200) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace), kJsonContentType);
}

inline void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(e.body(), kJsonContentType);
}

}  // namespace ninfer::server
