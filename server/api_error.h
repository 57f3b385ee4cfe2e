// Owns the OpenAI error object ({"error":{"message","type","param","code"}}) and its HTTP statuses.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ninfer::server {

// An error answered to a client. `code` is a string (OpenAI style), never the HTTP status.
struct ApiError {
  int status = 500;
  std::string type;                 // invalid_request_error | authentication_error | …
  std::string message;
  std::optional<std::string> param; // the request field concerned
  std::optional<std::string> code;  // invalid_type | context_length_exceeded | …

  nlohmann::ordered_json to_json() const;  // {"error":{message, type, param, code}}, nulls when missing
  // The JSON text of to_json(). Never throws on the user's text: invalid UTF-8 (a path, a model name, a parser
  // message quoting the body) becomes U+FFFD.
  std::string body() const;
};

// Thrown by request parsing; carries the ApiError to answer with.
class ApiException : public std::exception {
 public:
  explicit ApiException(ApiError error) : error_(std::move(error)) {}
  const char* what() const noexcept override { return error_.message.c_str(); }
  const ApiError& error() const { return error_; }

 private:
  ApiError error_;
};

// The statuses of docs/api.md, one constructor each.
ApiError bad_request(std::string message, std::optional<std::string> param = std::nullopt,
                     std::optional<std::string> code = std::nullopt);             // 400
ApiError invalid_json(std::string detail);                                         // 400 invalid_json
ApiError context_length_exceeded(std::string message, std::string param);          // 400
ApiError unauthorized(std::string message);                                        // 401
ApiError model_not_found(const std::string& model);                                // 404
ApiError route_not_found(const std::string& method, const std::string& path);      // 404
ApiError body_too_large(size_t limit_bytes);                                       // 413
ApiError queue_full(std::string message);                                          // 429
ApiError service_unavailable(std::string message, std::string code);               // 503
ApiError internal_error(std::string message);
// 400 model_has_no_tokenizer: the artifact has no tokenizer.json, only token-id prompts on /v1/completions are served.
ApiError no_tokenizer(std::optional<std::string> param);                                      // 500
// An HTTP-level refusal (malformed request, timeout, framing): invalid_request_error with `code`, or
// service_unavailable_error for 503.
ApiError http_error(int status, std::string code, std::string message);

}  // namespace ninfer::server
