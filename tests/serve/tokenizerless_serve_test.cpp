// An artifact packed without tokenizer.json (issue 19 item 6) served over HTTP: token-id prompts on /v1/completions
// answer with token ids; everything that needs text is refused with 400 model_has_no_tokenizer; /v1/models works.
#include <filesystem>

#include <gtest/gtest.h>
#include <httplib.h>

#include "engine/model/model_artifact.h"
#include "engine/pack/packer.h"
#include "engine/runtime/engine.h"
#include "server/engine_service.h"
#include "server/http_server.h"
#include "server/token_engine_service.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

using json = nlohmann::json;
const std::string kModel = std::string(NINFER_TEST_DATA) + "/serve/model";

class TokenizerlessServe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { s_ = new State(); }
  static void TearDownTestSuite() {
    delete s_;
    s_ = nullptr;
  }

  struct State {
    State() {
      // The fixture checkpoint without its tokenizer files: ninfer-pack warns and packs it.
      const std::filesystem::path hf = dir.file("hf");
      std::filesystem::create_directories(hf);
      for (const char* f : {"config.json", "generation_config.json", "model.safetensors"})
        std::filesystem::copy_file(std::filesystem::path(kModel) / f, hf / f);
      const std::string path = dir.file("notok.ninfer");
      pack_hf_checkpoint({.hf_dir = hf.string(), .output = path, .show_progress = false});
      artifact = std::make_unique<Artifact>(Artifact::open(path));
      EXPECT_FALSE(artifact->blob("tokenizer.json"));
      config = load_model_config(*artifact);
      engine = std::make_unique<Engine>(*artifact, config,
                                        EngineOptions{.max_context = 256, .prefill_chunk = 32, .max_concurrency = 4,
                                                      .threads = 2});
      server::EngineServiceConfig sc;
      sc.info.name = "notok";
      sc.info.max_context = 256;
      sc.stop_ids = server::generation_stop_ids(artifact->metadata()["generation"]);
      service = std::make_unique<server::TokenEngineService>(*engine, sc);
      server::HttpServerConfig hc;
      hc.port = 0;
      hc.log_jsonl_path = dir.file("timings.jsonl");
      http = std::make_unique<server::HttpServer>(hc, *service);
      port = http->start();
    }
    ~State() { http->stop(); }
    testing::TempDir dir;
    std::unique_ptr<Artifact> artifact;
    ModelConfig config;
    std::unique_ptr<Engine> engine;
    std::unique_ptr<server::TokenEngineService> service;
    std::unique_ptr<server::HttpServer> http;
    int port = 0;
  };

  static std::pair<int, json> post(const std::string& path, const json& body) {
    httplib::Client cli("127.0.0.1", s_->port);
    cli.set_read_timeout(60, 0);
    auto res = cli.Post(path.c_str(), body.dump(), "application/json");
    if (!res) return {0, nullptr};
    return {res->status, json::parse(res->body, nullptr, false)};
  }

  static void expect_no_tokenizer(const std::string& path, const json& body, const json& param) {
    auto [status, j] = post(path, body);
    EXPECT_EQ(status, 400) << path << " " << body.dump();
    EXPECT_EQ(j["error"]["code"], "model_has_no_tokenizer") << j.dump();
    EXPECT_EQ(j["error"]["param"], param) << j.dump();
    EXPECT_NE(j["error"]["message"].get<std::string>().find("model has no tokenizer; send token ids to /v1/completions"),
              std::string::npos);
  }

  static State* s_;
};

TokenizerlessServe::State* TokenizerlessServe::s_ = nullptr;

TEST_F(TokenizerlessServe, TokenIdPromptsAnswerWithTokenIds) {
  const json prompt = json::array({1, 2, 3, 4, 5, 6, 7, 8});
  auto [status, j] = post("/v1/completions", {{"prompt", prompt}, {"max_tokens", 6}, {"temperature", 0}});
  ASSERT_EQ(status, 200) << j.dump();
  const json& c = j["choices"][0];
  EXPECT_EQ(c["text"], "");
  ASSERT_TRUE(c["token_ids"].is_array()) << j.dump();
  EXPECT_LE(c["token_ids"].size(), 6u);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 8);
  EXPECT_GE(j["usage"]["completion_tokens"].get<int64_t>(), static_cast<int64_t>(c["token_ids"].size()));
  for (const json& id : c["token_ids"]) EXPECT_LT(id.get<int64_t>(), s_->config.vocab_size);

  // the same prompt as an array of one token list, greedy: the same ids
  auto [s2, j2] = post("/v1/completions", {{"prompt", json::array({prompt})}, {"max_tokens", 6}, {"temperature", 0}});
  ASSERT_EQ(s2, 200);
  EXPECT_EQ(j2["choices"][0]["token_ids"], c["token_ids"]);

  // streamed: the chunks' token_ids concatenate to the same ids
  httplib::Client cli("127.0.0.1", s_->port);
  auto res = cli.Post("/v1/completions",
                      json{{"prompt", prompt}, {"max_tokens", 6}, {"temperature", 0}, {"stream", true}}.dump(),
                      "application/json");
  ASSERT_TRUE(res);
  json streamed = json::array();
  for (size_t at = 0; (at = res->body.find("data: {", at)) != std::string::npos;) {
    const size_t end = res->body.find("\n\n", at);
    const json chunk = json::parse(res->body.substr(at + 6, end - at - 6));
    for (const json& ch : chunk["choices"])
      if (ch.contains("token_ids"))
        for (const json& id : ch["token_ids"]) streamed.push_back(id);
    at = end;
  }
  EXPECT_EQ(streamed, c["token_ids"]);

  // n > 1 with a seed: every choice lists its ids
  auto [s3, j3] = post("/v1/completions", {{"prompt", prompt}, {"max_tokens", 4}, {"n", 2}, {"seed", 3}});
  ASSERT_EQ(s3, 200) << j3.dump();
  ASSERT_EQ(j3["choices"].size(), 2u);
  for (const json& ch : j3["choices"]) EXPECT_TRUE(ch["token_ids"].is_array());
}

TEST_F(TokenizerlessServe, WhatNeedsTextIsRefused) {
  expect_no_tokenizer("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}}, "messages");
  expect_no_tokenizer("/v1/completions", {{"prompt", "hello"}}, "prompt");
  expect_no_tokenizer("/v1/completions", {{"prompt", json::array({"hello"})}}, "prompt");
  expect_no_tokenizer("/v1/completions", {{"prompt", {1, 2}}, {"stop", "x"}}, "stop");
  expect_no_tokenizer("/v1/completions", {{"prompt", {1, 2}}, {"logprobs", 1}}, "logprobs");
  expect_no_tokenizer("/tokenize", {{"prompt", "hello"}}, nullptr);
  expect_no_tokenizer("/detokenize", {{"tokens", {1, 2}}}, nullptr);
  // an id past the vocabulary is the engine's 400
  auto [status, j] = post("/v1/completions", {{"prompt", {1, s_->config.vocab_size + 5}}});
  EXPECT_EQ(status, 400) << j.dump();
  EXPECT_EQ(j["error"]["param"], "prompt");
}

TEST_F(TokenizerlessServe, ModelsStillAnswers) {
  httplib::Client cli("127.0.0.1", s_->port);
  auto res = cli.Get("/v1/models");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body)["data"][0]["id"], "notok");
}

}  // namespace
}  // namespace ninfer
