#include "server/api_error.h"

#include <fmt/format.h>

namespace ninfer::server {

nlohmann::ordered_json ApiError::to_json() const {
  nlohmann::ordered_json e = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (param) e["param"] = *param;
  if (code) e["code"] = *code;
  return {{"error", std::move(e)}};
}

std::string ApiError::body() const {
  return to_json().dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

ApiError bad_request(std::string message, std::optional<std::string> param,
                     std::optional<std::string> code) {
  return {400, "invalid_request_error", std::move(message), std::move(param), std::move(code)};
}

ApiError invalid_json(std::string detail) {
  return {400, "invalid_request_error",
          fmt::format("We could not parse the JSON body of your request: {}", detail), std::nullopt,
          "invalid_json"};
}

ApiError context_length_exceeded(std::string message, std::string param) {
  return {400, "invalid_request_error", std::move(message), std::move(param),
          "context_length_exceeded"};
}

ApiError unauthorized(std::string message) {
  return {401, "authentication_error", std::move(message), std::nullopt, "invalid_api_key"};
}

ApiError model_not_found(const std::string& model) {
  return {404, "invalid_request_error",
          fmt::format("The model '{}' does not exist; GET /v1/models lists the served model.", model),
          "model", "model_not_found"};
}

ApiError route_not_found(const std::string& method, const std::string& path) {
  return {404, "invalid_request_error", fmt::format("No route for {} {}.", method, path),
          std::nullopt, "not_found"};
}

ApiError body_too_large(size_t limit_bytes) {
  return {413, "invalid_request_error",
          fmt::format("The request body is larger than the server's limit of {} bytes.", limit_bytes),
          std::nullopt, "request_too_large"};
}

ApiError queue_full(std::string message) {
  return {429, "rate_limit_error", std::move(message), std::nullopt, "queue_full"};
}

ApiError service_unavailable(std::string message, std::string code) {
  return {503, "service_unavailable_error", std::move(message), std::nullopt, std::move(code)};
}

ApiError internal_error(std::string message) {
  return {500, "server_error", std::move(message), std::nullopt, "internal_error"};
}

ApiError no_tokenizer(std::optional<std::string> param) {
  return bad_request("model has no tokenizer; send token ids to /v1/completions ('prompt' as an array of token ids, "
                     "no stop strings or logprobs): the artifact was packed without tokenizer.json.",
                     std::move(param), "model_has_no_tokenizer");
}

ApiError http_error(int status, std::string code, std::string message) {
  return {status, status == 503 ? "service_unavailable_error" : "invalid_request_error", std::move(message),
          std::nullopt, std::move(code)};
}

}  // namespace ninfer::server
