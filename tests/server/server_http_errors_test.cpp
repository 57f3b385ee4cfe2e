// HTTP integration tests of every error: status, OpenAI error object, and the server serving on after it.
#include <fmt/format.h>

#include "tests/server/raw_http.h"
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
  EXPECT_EQ(ct->second, "application/json; charset=utf-8");
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
  JsonResponse n = post("/v1/chat/completions", chat_body("x", {{"n", 17}}));
  expect_error(n, 400, "invalid_request_error", "invalid_value", "n");
  EXPECT_NE(n.body["error"]["message"].get<std::string>().find("at most 16"), std::string::npos);
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
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("limit of 1 "), std::string::npos) << r.raw;
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


// The OpenAI error object on a raw response, with a string code.
void expect_raw_error(const RawResponse& r, int status, const std::string& code) {
  EXPECT_EQ(r.status, status) << r.head << r.body;
  EXPECT_EQ(r.code(), code) << r.head << r.body;
  EXPECT_EQ(r.header("Content-Type"), "application/json; charset=utf-8") << r.head;
  ASSERT_TRUE(r.json.is_object()) << r.body;
  EXPECT_TRUE(r.json["error"]["message"].is_string()) << r.body;
  EXPECT_TRUE(r.json["error"]["type"].is_string()) << r.body;
}

std::string chat_json(const std::string& content) {
  return R"({"messages":[{"role":"user","content":")" + content + R"("}]})";
}

// Issue 16 #1: a path with an invalid UTF-8 byte aborted the process (the not-found message's JSON dump threw).
TEST_F(ServerTest, InvalidUtf8InThePathIsNotFound) {
  start();
  expect_raw_error(raw_exchange(port_, "GET /%FF HTTP/1.1\r\nHost: x\r\n\r\n"), 404, "not_found");
  expect_raw_error(raw_exchange(port_, "GET /\xff\xfe/x HTTP/1.1\r\nHost: x\r\n\r\n"), 404, "not_found");
  expect_raw_error(raw_exchange(port_, "POST /%C0%AF HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"), 404,
                   "not_found");
  // GET /v1/models/<invalid UTF-8> was a 500
  RawResponse m = raw_exchange(port_, "GET /v1/models/%FF HTTP/1.1\r\nHost: x\r\n\r\n");
  expect_raw_error(m, 404, "model_not_found");
  EXPECT_EQ(m.json["error"]["param"], "model");
  expect_still_serving();
}

TEST_F(ServerTest, InvalidUtf8InThePathIsNotFoundWithAnApiKey) {
  HttpServerConfig sc;
  sc.api_keys = {"k1"};
  start({}, sc);
  auth_ = {{"Authorization", "Bearer k1"}};
  expect_raw_error(raw_exchange(port_, "GET /%FF HTTP/1.1\r\nHost: x\r\n\r\n"), 404, "not_found");
  expect_raw_error(raw_exchange(port_, "GET /v1/models/%FF HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k1\r\n\r\n"),
                   404, "model_not_found");
  expect_still_serving();
}

// Issue 16 #2 and #3: invalid UTF-8 in the body's strings and numbers beyond a double were 500s.
TEST_F(ServerTest, InvalidUtf8AndHugeNumbersInTheBodyAreInvalidJson) {
  start();
  const std::vector<std::string> bodies = {
      chat_json("ab\xff" "cd"),                                      // a stray byte
      chat_json("\xc0\xaf"),                                         // overlong '/'
      chat_json("\xed\xa0\x80\xed\xb0\x80"),                         // CESU-8 surrogates
      chat_json("\xe2\x82"),                                         // truncated sequence
      R"({"mess)" "\xff" R"(ages":[{"role":"user","content":"x"}]})",  // in a key
      R"({"model":")" "\xff" R"(","messages":[{"role":"user","content":"x"}]})",  // in model
      R"({"temperature":1e400,"messages":[{"role":"user","content":"x"}]})",
      R"({"unknown_field":-1e400,"messages":[{"role":"user","content":"x"}]})",
      R"({"max_tokens":1e999999,"messages":[{"role":"user","content":"x"}]})",
  };
  for (const std::string& b : bodies) {
    SCOPED_TRACE(b);
    expect_raw_error(raw_exchange(port_, raw_post("/v1/chat/completions", b)), 400, "invalid_json");
  }
  expect_raw_error(raw_exchange(port_, raw_post("/v1/completions", R"({"prompt":"\xff","seed":1e400})")), 400,
                   "invalid_json");
  expect_still_serving();
}

// Issue 16 #4: the body limit applies to the decoded body, whatever its framing or encoding.
TEST_F(ServerTest, BodyLimitAppliesToChunkedAndCompressedBodies) {
  HttpServerConfig sc;
  sc.max_body_bytes = 4096;
  start({}, sc);
  const std::string big = chat_json(std::string(8000, 'a'));
  std::string chunked = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (size_t off = 0; off < big.size(); off += 1000) {
    const std::string piece = big.substr(off, 1000);
    chunked += fmt::format("{:x}\r\n{}\r\n", piece.size(), piece);
  }
  chunked += "0\r\n\r\n";
  RawResponse r = raw_exchange(port_, chunked);
  expect_raw_error(r, 413, "request_too_large");
  EXPECT_EQ(r.header("Connection"), "close");
  // a chunked body under the limit is fine
  const std::string small = chat_json("hello there");
  EXPECT_EQ(raw_exchange(port_, fmt::format("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
                                            "chunked\r\n\r\n{:x}\r\n{}\r\n0\r\n\r\n", small.size(), small)).status,
            200);
  // gzip: a small compressed body that inflates past the limit
  auto c = client();
  c.set_compress(true);
  auto res = c.Post("/v1/chat/completions", big, "application/json");
  ASSERT_TRUE(res);
  JsonResponse g = to_json_response(res);
  expect_error(g, 413, "invalid_request_error", "request_too_large");
  // a declared Content-Length over the limit is refused before the body is read
  RawResponse declared = raw_exchange(port_, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: "
                                             "99999999999\r\n\r\n{");
  expect_raw_error(declared, 413, "request_too_large");
  expect_still_serving();
}

// Issue 16 #8: errors the HTTP library produces carry a string code, and come at once.
TEST_F(ServerTest, LibraryErrorsAreOpenAiErrorsAtOnce) {
  start();
  struct Case {
    std::string name, bytes;
    int status;
    std::string code;
    bool half_close = false;
  };
  const std::string post_head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n";
  const std::vector<Case> cases = {
      {"bad chunk size", post_head + "Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", 400, "invalid_body"},
      {"100 kB header", "GET /health HTTP/1.1\r\nX-Big: " + std::string(100000, 'a') + "\r\n\r\n", 431,
       "request_header_too_large"},
      {"10 kB header line", "GET /health HTTP/1.1\r\nX-Big: " + std::string(10000, 'a') + "\r\n\r\n", 431,
       "request_header_too_large"},
      {"100 kB request line", "GET /" + std::string(100000, 'a') + " HTTP/1.1\r\n\r\n", 431,
       "request_header_too_large"},
      {"10 kB request target", "GET /" + std::string(10000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n", 414, "uri_too_long"},
      {"unknown method", "BREW /health HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed_request"},
      {"garbage request line", "\x01\x02garbage\r\n\r\n", 400, "malformed_request"},
      {"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, "malformed_request"},
      {"invalid gzip", post_head + "Content-Encoding: gzip\r\nContent-Length: 7\r\n\r\nnotgzip", 400, "invalid_body"},
      {"unknown encoding", post_head + "Content-Encoding: compress\r\nContent-Length: 2\r\n\r\n{}", 415,
       "unsupported_content_encoding"},
      {"truncated body", post_head + "Content-Length: 100\r\n\r\n{\"messages\":", 400, "invalid_body", true},
      {"no length", post_head + "\r\n{}", 411, "length_required"},
      {"length and chunked", post_head + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
       "unsupported_transfer_encoding"},
      {"other transfer coding", post_head + "Transfer-Encoding: gzip\r\n\r\n", 501, "unsupported_transfer_encoding"},
      {"bad Content-Length", post_head + "Content-Length: -1\r\n\r\n", 400, "malformed_request"},
      {"two Content-Lengths", post_head + "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400,
       "malformed_request"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RawConnection conn(port_);
    ASSERT_TRUE(conn.connected());
    const auto t0 = std::chrono::steady_clock::now();
    conn.send(c.bytes);
    if (c.half_close) conn.shutdown_write();
    RawResponse r = conn.read_response(std::chrono::seconds(3));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    expect_raw_error(r, c.status, c.code);
    EXPECT_LT(s, 1.0) << "answered after " << s << " s";
    EXPECT_EQ(r.header("Connection"), "close") << r.head;
    EXPECT_TRUE(conn.closed_within(std::chrono::seconds(2)));
  }
  expect_still_serving();
}

}  // namespace
}  // namespace ninfer::server::testing
