// Owns the HTTP test fixture: a FakeEngine behind an HttpServer on 127.0.0.1:<ephemeral>, and clients.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/http_server.h"
#include "tests/server/fake_engine.h"
#include "tests/support/test_files.h"

namespace ninfer::server::testing {

using json = nlohmann::json;

struct JsonResponse {
  int status = 0;             // 0: no HTTP response at all
  json body;                  // parsed body (null when it is not JSON)
  std::string raw;
  httplib::Headers headers;
};

// One streamed response, parsed as server-sent events.
struct StreamResponse {
  int status = 0;
  httplib::Headers headers;
  std::vector<json> events;           // every `data:` payload except [DONE], parsed
  std::vector<std::string> comments;  // `:` lines
  bool done = false;                  // saw data: [DONE]
  bool completed = false;             // the HTTP exchange finished without the client cancelling
  std::string error;                  // the client's error when not completed
  std::string raw;

  // The text of every chat chunk's delta (or completion chunk's text), per channel.
  std::string content() const {
    std::string s;
    for (const json& e : events)
      if (e.contains("choices") && !e["choices"].empty()) {
        const json& c = e["choices"][0];
        if (c.contains("delta") && c["delta"].contains("content") && c["delta"]["content"].is_string())
          s += c["delta"]["content"].get<std::string>();
        if (c.contains("text") && c["text"].is_string()) s += c["text"].get<std::string>();
      }
    return s;
  }
  std::string reasoning() const {
    std::string s;
    for (const json& e : events)
      if (e.contains("choices") && !e["choices"].empty() && e["choices"][0].contains("delta")) {
        const json& d = e["choices"][0]["delta"];
        if (d.contains("reasoning_content")) s += d["reasoning_content"].get<std::string>();
      }
    return s;
  }
  std::string finish_reason() const {
    for (const json& e : events)
      if (e.contains("choices") && !e["choices"].empty() && e["choices"][0]["finish_reason"].is_string())
        return e["choices"][0]["finish_reason"];
    return "";
  }
};

class ServerTest : public ::testing::Test {
 protected:
  void start(FakeEngine::Config ec = {}, HttpServerConfig sc = {}) {
    engine_ = std::make_unique<FakeEngine>(ec);
    sc.host = "127.0.0.1";
    sc.port = 0;
    if (sc.log_jsonl_path.empty()) {
      std::filesystem::path dir = std::filesystem::temp_directory_path() / "ninfer_server_http_test";
      std::filesystem::create_directories(dir);
      const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
      log_path_ = (dir / (std::string(info->test_suite_name()) + "." + info->name() + ".jsonl")).string();
      std::filesystem::remove(log_path_);
      sc.log_jsonl_path = log_path_;
    } else {
      log_path_ = sc.log_jsonl_path;
    }
    server_ = std::make_unique<HttpServer>(sc, *engine_);
    port_ = server_->start();
    ASSERT_GT(port_, 0);
  }

  void TearDown() override {
    if (server_) server_->stop();
    server_.reset();
    engine_.reset();
  }

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(5, 0);
    c.set_read_timeout(20, 0);
    c.set_write_timeout(20, 0);
    return c;
  }

  JsonResponse get(const std::string& path, const httplib::Headers& headers = {}) const {
    auto c = client();
    auto res = c.Get(path.c_str(), headers);
    return to_json_response(res);
  }

  JsonResponse post(const std::string& path, const std::string& body, const httplib::Headers& headers = {}) const {
    auto c = client();
    auto res = c.Post(path.c_str(), headers, body, "application/json");
    return to_json_response(res);
  }
  JsonResponse post(const std::string& path, const json& body, const httplib::Headers& headers = {}) const {
    return post(path, body.dump(), headers);
  }

  // Streams a POST; `keep_going(what arrived so far)` returning false makes the client hang up.
  StreamResponse post_stream(const std::string& path, const json& body, const httplib::Headers& headers = {},
                             std::function<bool(const StreamResponse&)> keep_going = nullptr) const {
    StreamResponse out;
    auto c = client();
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.headers = headers;
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    req.response_handler = [&](const httplib::Response& r) {
      out.status = r.status;
      out.headers = r.headers;
      return true;
    };
    std::string pending;
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      out.raw.append(data, n);
      pending.append(data, n);
      for (size_t end; (end = pending.find("\n\n")) != std::string::npos;) {
        std::string block = pending.substr(0, end);
        pending.erase(0, end + 2);
        if (block.rfind("data: ", 0) == 0) {
          std::string payload = block.substr(6);
          if (payload == "[DONE]") out.done = true;
          else out.events.push_back(json::parse(payload));
        } else if (block.rfind(":", 0) == 0) {
          out.comments.push_back(block);
        } else {
          ADD_FAILURE() << "not an SSE block: " << block;
        }
      }
      return !keep_going || keep_going(out);
    };
    auto res = c.send(req);
    out.completed = static_cast<bool>(res);
    if (!res) out.error = httplib::to_string(res.error());
    return out;
  }

  json chat_body(const std::string& prompt, json extra = json::object()) const {
    json b = {{"model", "fake-model"}, {"messages", json::array({{{"role", "user"}, {"content", prompt}}})}};
    for (auto& [k, v] : extra.items()) b[k] = v;
    return b;
  }

  std::vector<json> log_lines() const {
    server_->flush_log();
    return ::ninfer::testing::read_jsonl(log_path_);
  }

  // Polls `cond` every 5 ms for up to `timeout`.
  static bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return cond();
  }

  // The server still answers: /health and one ordinary chat request.
  void expect_still_serving() const {
    JsonResponse h = get("/health");
    EXPECT_EQ(h.status, 200);
    JsonResponse r = post("/v1/chat/completions", chat_body("still there?"), auth_);
    EXPECT_EQ(r.status, 200) << r.raw;
  }

  static JsonResponse to_json_response(const httplib::Result& res) {
    JsonResponse r;
    if (!res) return r;
    r.status = res->status;
    r.raw = res->body;
    r.headers = res->headers;
    r.body = json::parse(res->body, nullptr, false);
    if (r.body.is_discarded()) r.body = nullptr;
    return r;
  }

  std::unique_ptr<FakeEngine> engine_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
  std::string log_path_;
  httplib::Headers auth_;  // sent by expect_still_serving()
};

}  // namespace ninfer::server::testing
