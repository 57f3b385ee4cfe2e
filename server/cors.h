// Owns CORS: which browser origins may read the server's answers (--cors-origin), and preflight answers.
#pragma once

#include <string>
#include <vector>

#include <httplib.h>

namespace ninfer::server {

// `allowed`: exact origins ("https://app.example.com", scheme://host[:port]) or "*" for any; empty: no CORS
// headers at all, so browsers on other origins cannot read the answers (the default, docs/security.md).
// For a request whose Origin is allowed, adds Access-Control-Allow-Origin (the origin itself), Vary: Origin
// and Access-Control-Expose-Headers: X-Request-Id to `res`. For an allowed preflight (OPTIONS with
// Access-Control-Request-Method) it writes the whole answer, 204 with the allowed methods (GET, POST) and the
// requested headers, cached 10 minutes, and returns true. No credentials mode: API keys travel in headers.
bool apply_cors(const std::vector<std::string>& allowed, const httplib::Request& req, httplib::Response& res);

}  // namespace ninfer::server
