#include "server/cors.h"

#include <algorithm>

namespace ninfer::server {

bool apply_cors(const std::vector<std::string>& allowed, const httplib::Request& req, httplib::Response& res) {
  if (allowed.empty() || !req.has_header("Origin")) return false;
  const std::string origin = req.get_header_value("Origin");
  const bool ok = std::any_of(allowed.begin(), allowed.end(),
                              [&](const std::string& a) { return a == "*" || a == origin; });
  res.set_header("Vary", "Origin");
  if (!ok) return false;  // no Allow-Origin: the browser keeps the answer from the page
  res.set_header("Access-Control-Allow-Origin", origin);
  if (req.method != "OPTIONS" || !req.has_header("Access-Control-Request-Method")) {
    res.set_header("Access-Control-Expose-Headers", "X-Request-Id");
    return false;
  }
  res.status = 204;
  res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  const std::string headers = req.get_header_value("Access-Control-Request-Headers");
  if (!headers.empty()) res.set_header("Access-Control-Allow-Headers", headers);
  res.set_header("Access-Control-Max-Age", "600");
  return true;
}

}  // namespace ninfer::server
