// HTTP integration tests of every error: status, OpenAI error object, and the server serving on after it.
#include "tests/server/server_fixture.h"

namespace ninfer::server::testing {
namespace {

// The OpenAI error envelope with a string (or null) code, never the HTTP status.
void expect_error(const JsonResponse& r, int status, const std::string& type, const std::string& code,
                  const std::string& param = "") {
  EXPECT_EQ(r.status, status) << r.raw;
  ASSERT_TRUE(r.body.is_object()) << r.raw;
  ASSERT_TRUE(r.body.contains("error")) << r.raw;
  const json& e = r.body["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << r.raw;
  EXPECT_EQ(e["type"], type) << r.raw;
  EXPECT_TRUE(e.contains("param")) << r.raw;
  if (param.empty()) EXPECT_TRUE(e["param"].is_null()) << r.raw;
  else EXPECT_EQ(e["param"], param) << r.raw;
  EXPECT_EQ(e["code"], code) << r.raw;
  auto ct = r.headers.find("Content-Type");
  ASSERT_NE(ct, r.headers.end());
  EXPECT_EQ(ct->second, "application/json");
}

TEST_F(ServerTest, BadJsonAndBadFields) {
  start();
  expect_error(post("/v1/chat/completions", std::string("{\"messages\": [")), 400, "invalid_request_error", "invalid_json");
  expect_still_serving();
  expect_error(post("/v1/chat/completions", std::string("")), 400, "invalid_request_error", "invalid_json");
  expect_error(post("/v1/chat/completions", std::string("[1,2]")), 400, "invalid_request_error", "invalid_type");
  expect_error(post("/v1/chat/completions", chat_body("x", {{"temperature", "warm"}})), 400, "invalid_request_error",
               "invalid_type", "temperature");
  expect_error(post("/v1/chat/completions", chat_body("x", {{"max_tokens", -1}})), 400, "invalid_request_error",
               "invalid_value", "max_tokens");
  expect_error(post("/v1/chat/completions", json{{"model", "fake-model"}}), 400, "invalid_request_error",
               "missing_required_parameter", "messages");
  JsonResponse n = post("/v1/chat/completions", chat_body("x", {{"n", 3}}));
  expect_error(n, 400, "invalid_request_error", "unsupported_parameter", "n");
  EXPECT_NE(n.body["error"]["message"].get<std::string>().find("n=3"), std::string::npos);
  expect_error(post("/v1/completions", json{{"prompt", 12.5}}), 400, "invalid_request_error", "invalid_type", "prompt");
  // unknown fields are ignored, as OpenAI does
  EXPECT_EQ(post("/v1/chat/completions", chat_body("x", {{"frobnicate", {{"deep", true}}}})).status, 200);
  expect_still_serving();
  // none of the rejected requests reached the engine or the JSONL
  EXPECT_EQ(log_lines().size(), 3u);  // the two expect_still_serving chats and the unknown-field one
}

TEST_F(ServerTest, ContextLengthExceededCarriesTheNumbers) {
  FakeEngine::Config ec;
  ec.max_context = 64;
  start(ec);
  // the engine's check: prompt + max_tokens beyond the context
  std::string prompt;
  for (int i = 0; i < 50; ++i) prompt += "word ";
  JsonResponse r = post("/v1/chat/completions", chat_body(prompt, {{"max_tokens", 20}}));
  expect_error(r, 400, "invalid_request_error", "context_length_exceeded", "messages");
  const std::string msg = r.body["error"]["message"];
  EXPECT_NE(msg.find("64"), std::string::npos) << msg;  // the context
  EXPECT_NE(msg.find("74"), std::string::npos) << msg;  // requested: 54 prompt + 20
  EXPECT_NE(msg.find("54"), std::string::npos) << msg;  // the prompt
  // the server's own check: max_tokens alone fills the context
  JsonResponse early = post("/v1/chat/completions", chat_body("x", {{"max_completion_tokens", 64}}));
  expect_error(early, 400, "invalid_request_error", "context_length_exceeded", "max_completion_tokens");
  EXPECT_NE(early.body["error"]["message"].get<std::string>().find("64"), std::string::npos);
  // a generation that runs into the context ends with length
  JsonResponse full = post("/v1/chat/completions", chat_body("__endless__"));
  ASSERT_EQ(full.status, 200);
  EXPECT_EQ(full.body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(full.body["timings"]["stop_reason"], "context_limit");
  EXPECT_EQ(full.body["usage"]["total_tokens"], 64);
  expect_still_serving();
  std::vector<json> lines = log_lines();
  ASSERT_GE(lines.size(), 1u);
  EXPECT_EQ(lines[0]["stop_reason"], "error");  // the rejected one is logged too
  EXPECT_EQ(lines[0]["http_status"], 400);
  EXPECT_EQ(lines[0]["prompt_tokens"], 54);
  EXPECT_NE(lines[0]["error"].get<std::string>().find("64"), std::string::npos);
}

TEST_F(ServerTest, ApiKey) {
  HttpServerConfig sc;
  sc.api_keys = {"secret-1", "secret-2"};
  start({}, sc);
  auth_ = {{"Authorization", "Bearer secret-2"}};
  expect_error(post("/v1/chat/completions", chat_body("x")), 401, "authentication_error", "invalid_api_key");
  expect_error(post("/v1/chat/completions", chat_body("x"), {{"Authorization", "Bearer nope"}}), 401,
               "authentication_error", "invalid_api_key");
  expect_error(get("/v1/models"), 401, "authentication_error", "invalid_api_key");
  expect_error(post("/v1/completions", json{{"prompt", "x"}}, {{"Authorization", "Basic c2VjcmV0LTE="}}), 401,
               "authentication_error", "invalid_api_key");
  EXPECT_EQ(post("/v1/chat/completions", chat_body("x"), {{"Authorization", "Bearer secret-1"}}).status, 200);
  EXPECT_EQ(post("/v1/chat/completions", chat_body("x"), {{"X-Api-Key", "secret-2"}}).status, 200);
  EXPECT_EQ(get("/v1/models", auth_).status, 200);
  // /health and /metrics need no key
  EXPECT_EQ(get("/health").status, 200);
  EXPECT_EQ(get("/metrics").status, 200);
  expect_still_serving();
}

TEST_F(ServerTest, NotFound) {
  start();
  expect_error(get("/v2/whatever"), 404, "invalid_request_error", "not_found");
  expect_error(post("/v1/embeddings", json{{"input", "x"}}), 404, "invalid_request_error", "not_found");
  expect_error(post("/v1/chat/completions", chat_body("x", {{"model", "gpt-4o"}})), 404, "invalid_request_error",
               "model_not_found", "model");
  JsonResponse m = post("/v1/completions", json{{"model", "gpt-4o"}, {"prompt", "x"}});
  expect_error(m, 404, "invalid_request_error", "model_not_found", "model");
  EXPECT_NE(m.body["error"]["message"].get<std::string>().find("gpt-4o"), std::string::npos);
  expect_still_serving();
}

TEST_F(ServerTest, BodyTooLarge) {
  HttpServerConfig sc;
  sc.max_body_bytes = 4096;
  start({}, sc);
  std::string big(8000, 'a');
  JsonResponse r = post("/v1/chat/completions", chat_body(big));
  expect_error(r, 413, "invalid_request_error", "request_too_large");
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("4096"), std::string::npos);
  expect_still_serving();
  // just under the limit is fine
  EXPECT_EQ(post("/v1/chat/completions", chat_body(std::string(3000, 'b'))).status, 200);
}

TEST_F(ServerTest, QueueFullIs429) {
  start();
  engine_->set_queue_capacity(0);
  JsonResponse r = post("/v1/chat/completions", chat_body("x"));
  expect_error(r, 429, "rate_limit_error", "queue_full");
  EXPECT_EQ(post("/v1/chat/completions", chat_body("x", {{"stream", true}})).status, 429);
  engine_->set_queue_capacity(1024);
  expect_still_serving();
  std::vector<json> lines = log_lines();
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0]["http_status"], 429);
}

TEST_F(ServerTest, InFlightLimitIs429) {
  HttpServerConfig sc;
  sc.max_in_flight = 1;
  sc.sse_ping_interval = std::chrono::milliseconds(20);
  start({}, sc);
  std::thread holder([&] {
    StreamResponse s = post_stream("/v1/chat/completions", chat_body("__silent__", {{"stream", true}}), {},
                                   [](const StreamResponse& r) { return r.events.empty(); });
  });
  ASSERT_TRUE(eventually([&] { return server_->in_flight() == 1; }));
  JsonResponse r = post("/v1/chat/completions", chat_body("x"));
  holder.join();
  expect_error(r, 429, "rate_limit_error", "queue_full");
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("1 requests"), std::string::npos);
  ASSERT_TRUE(eventually([&] { return server_->in_flight() == 0; }));
  expect_still_serving();
}

TEST_F(ServerTest, EngineFailuresAre500) {
  start();
  expect_error(post("/v1/chat/completions", chat_body("__throw__")), 500, "server_error", "internal_error");
  expect_still_serving();
  JsonResponse failed = post("/v1/chat/completions", chat_body("__fail__ now"));
  expect_error(failed, 500, "server_error", "internal_error");
  EXPECT_NE(failed.body["error"]["message"].get<std::string>().find("scripted failure"), std::string::npos);
  expect_still_serving();
  expect_error(post("/v1/chat/completions", chat_body("__invalid__")), 400, "invalid_request_error", "invalid_value",
               "messages");
  expect_error(post("/v1/completions", json{{"prompt", json::array({5, 99999})}}), 400, "invalid_request_error",
               "invalid_value", "prompt");
  // mid-stream failure: an error event, then [DONE]
  StreamResponse s = post_stream("/v1/chat/completions", chat_body("__fail__ now", {{"stream", true}}));
  EXPECT_EQ(s.status, 200);
  EXPECT_TRUE(s.done);
  ASSERT_FALSE(s.events.empty());
  EXPECT_EQ(s.events.back()["error"]["type"], "server_error");
  EXPECT_EQ(s.events.back()["error"]["code"], "internal_error");
  expect_still_serving();
  std::vector<json> lines = log_lines();
  int errors = 0;
  for (const json& l : lines)
    if (l["stop_reason"] == "error") {
      errors++;
      EXPECT_FALSE(l["error"].get<std::string>().empty());
    }
  EXPECT_EQ(errors, 5);  // throw, fail, invalid, invalid token, stream fail
}

TEST_F(ServerTest, ErrorsInStreamingRequestsBeforeTheStreamAreJson) {
  start();
  JsonResponse r = post("/v1/chat/completions", chat_body("x", {{"stream", true}, {"top_p", 5}}));
  expect_error(r, 400, "invalid_request_error", "invalid_value", "top_p");
  expect_still_serving();
}

}  // namespace
}  // namespace ninfer::server::testing
