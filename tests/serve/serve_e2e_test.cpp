// ninfer's whole serving path (artifact → engine → chat template/tokenizer → HTTP) against transformers:
// tools/serve_fixture/make_serving_fixture.py recorded what HF generates for the same requests.
#include <algorithm>
#include <fstream>

#include <gtest/gtest.h>
#include <httplib.h>

#include "engine/model/model_artifact.h"
#include "engine/pack/packer.h"
#include "engine/runtime/engine.h"
#include "server/engine_service.h"
#include "server/http_server.h"
#include "server/openai_request.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

const std::string kData = std::string(NINFER_TEST_DATA) + "/serve/";

std::string trim_newlines(std::string s) {
  while (!s.empty() && s.front() == '\n') s.erase(s.begin());
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

class ServeE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { s_ = new State(); }
  static void TearDownTestSuite() {
    delete s_;
    s_ = nullptr;
  }

  struct State {
    State() {
      std::string path = dir.file("serve.ninfer");
      pack_hf_checkpoint({.hf_dir = kData + "model", .output = path, .show_progress = false});
      artifact = std::make_unique<Artifact>(Artifact::open(path));
      config = load_model_config(*artifact);
      tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_json(*artifact->blob("tokenizer.json")));
      engine = std::make_unique<Engine>(*artifact, config,
                                        EngineOptions{.max_context = 1024, .prefill_chunk = 32, .max_concurrency = 4,
                                                      .threads = 2});
      server::EngineServiceConfig sc;
      sc.info.name = "serve-fixture";
      sc.info.max_context = 1024;
      sc.info.default_sampling = server::default_sampling(artifact->metadata()["generation"]);
      sc.info.settings.kv_dtype = "f32";
      sc.info.settings.max_context = 1024;
      sc.stop_ids = server::default_stop_ids(artifact->metadata()["generation"], *tokenizer);
      service = std::make_unique<server::EngineService>(
          *engine, *tokenizer, ChatTemplate::from_template_text(artifact->metadata()["chat_template"].get<std::string>()),
          sc);
      server::HttpServerConfig hc;
      hc.port = 0;
      hc.log_jsonl_path = dir.file("timings.jsonl");
      http = std::make_unique<server::HttpServer>(hc, *service);
      port = http->start();
      std::ifstream in(kData + "golden.json");
      golden = nlohmann::json::parse(in);
    }
    ~State() { http->stop(); }
    testing::TempDir dir;
    std::unique_ptr<Artifact> artifact;
    ModelConfig config;
    std::unique_ptr<Tokenizer> tokenizer;
    std::unique_ptr<Engine> engine;
    std::unique_ptr<server::EngineService> service;
    std::unique_ptr<server::HttpServer> http;
    int port = 0;
    nlohmann::json golden;
  };

  static nlohmann::json post(const std::string& path, const nlohmann::json& body, int want_status = 200) {
    httplib::Client cli("127.0.0.1", s_->port);
    cli.set_read_timeout(60, 0);
    auto res = cli.Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(res) << "no response from " << path;
    if (!res) return nullptr;
    EXPECT_EQ(res->status, want_status) << res->body;
    return nlohmann::json::parse(res->body);
  }

  // HF's greedy tokens up to the first end-of-generation id (which the server stops at, and does not print).
  static std::pair<std::vector<int32_t>, bool> expected_ids(const nlohmann::json& conv) {
    std::vector<int32_t> ids;
    const auto& stops = server::default_stop_ids(s_->artifact->metadata()["generation"], *s_->tokenizer);
    for (int32_t id : conv["greedy_ids"]) {
      if (std::find(stops.begin(), stops.end(), id) != stops.end()) return {ids, true};
      ids.push_back(id);
    }
    return {ids, false};
  }

  static State* s_;
};
ServeE2E::State* ServeE2E::s_ = nullptr;

TEST_F(ServeE2E, CompletionsMatchTransformersGreedy) {
  for (const auto& conv : s_->golden["conversations"]) {
    auto [ids, hit_eos] = expected_ids(conv);
    auto r = post("/v1/completions", {{"model", "serve-fixture"}, {"prompt", conv["prompt_text"]},
                                      {"max_tokens", 24}, {"temperature", 0}});
    ASSERT_TRUE(r.is_object());
    EXPECT_EQ(r["choices"][0]["text"], s_->tokenizer->decode(ids));
    EXPECT_EQ(r["usage"]["prompt_tokens"], conv["prompt_ids"].size());
    EXPECT_EQ(r["usage"]["completion_tokens"], ids.size() + (hit_eos ? 1 : 0));
    EXPECT_EQ(r["choices"][0]["finish_reason"], hit_eos ? "stop" : "length");
  }
}

TEST_F(ServeE2E, ChatAppliesTheTemplateLikeTransformersAndSplitsReasoning) {
  for (const auto& conv : s_->golden["conversations"]) {
    auto [ids, hit_eos] = expected_ids(conv);
    auto r = post("/v1/chat/completions",
                  {{"model", "serve-fixture"}, {"messages", conv["messages"]}, {"max_tokens", 24}, {"temperature", 0}});
    ASSERT_TRUE(r.is_object());
    EXPECT_EQ(r["usage"]["prompt_tokens"], conv["prompt_ids"].size()) << "template + tokenizer differ from HF";
    const auto& msg = r["choices"][0]["message"];
    // The prompt opens <think>, so what the model writes is reasoning until it writes </think>.
    std::string reasoning = msg.value("reasoning_content", std::string());
    EXPECT_EQ(trim_newlines(reasoning), trim_newlines(s_->tokenizer->decode(ids)));
    EXPECT_EQ(r["usage"]["completion_tokens_details"]["reasoning_tokens"].get<int64_t>() +
                  (hit_eos ? 1 : 0),
              r["usage"]["completion_tokens"].get<int64_t>());
    EXPECT_TRUE(r.contains("timings"));
  }
}

// Issue 16 #9: the developer role was refused ("Unexpected message role."); OpenAI maps it to system.
TEST_F(ServeE2E, DeveloperIsTheSystemRoleAndALateOneSaysWhatToDo) {
  auto chat = [](const std::string& role) {
    return nlohmann::json{{"model", "serve-fixture"},
                          {"messages", {{{"role", role}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}}},
                          {"max_tokens", 8},
                          {"temperature", 0}};
  };
  auto sys = post("/v1/chat/completions", chat("system"));
  auto dev = post("/v1/chat/completions", chat("developer"));
  ASSERT_TRUE(sys.is_object() && dev.is_object());
  EXPECT_EQ(dev["usage"]["prompt_tokens"], sys["usage"]["prompt_tokens"]);
  EXPECT_EQ(dev["choices"][0]["message"], sys["choices"][0]["message"]);
  for (const std::string role : {"system", "developer"}) {
    auto late = post("/v1/chat/completions",
                     {{"model", "serve-fixture"},
                      {"messages", {{{"role", "user"}, {"content", "Hi"}}, {{"role", role}, {"content", "Be brief."}}}}},
                     400);
    ASSERT_TRUE(late.is_object());
    EXPECT_EQ(late["error"]["code"], "invalid_value") << late;
    EXPECT_EQ(late["error"]["param"], "messages[1].role") << late;
    const std::string msg = late["error"]["message"];
    EXPECT_NE(msg.find("must be the first message"), std::string::npos) << msg;
    EXPECT_NE(msg.find("messages[0]"), std::string::npos) << msg;
  }
}

TEST_F(ServeE2E, StreamingEqualsNonStreaming) {
  const auto& conv = s_->golden["conversations"][1];
  nlohmann::json body = {{"model", "serve-fixture"}, {"messages", conv["messages"]}, {"max_tokens", 24},
                         {"temperature", 0}, {"stream", true}, {"stream_options", {{"include_usage", true}}}};
  httplib::Client cli("127.0.0.1", s_->port);
  cli.set_read_timeout(60, 0);
  auto res = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  std::string reasoning, content;
  bool done = false, usage = false;
  std::istringstream lines(res->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("data: ", 0) != 0) continue;
    std::string data = line.substr(6);
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    auto chunk = nlohmann::json::parse(data);
    if (chunk.contains("usage") && chunk["usage"].is_object()) usage = true;
    for (const auto& ch : chunk["choices"]) {
      const auto& d = ch["delta"];
      if (d.contains("reasoning_content") && d["reasoning_content"].is_string()) reasoning += d["reasoning_content"];
      if (d.contains("content") && d["content"].is_string()) content += d["content"];
    }
  }
  EXPECT_TRUE(done);
  EXPECT_TRUE(usage);
  auto whole = post("/v1/chat/completions", {{"model", "serve-fixture"}, {"messages", conv["messages"]},
                                             {"max_tokens", 24}, {"temperature", 0}});
  EXPECT_EQ(reasoning, whole["choices"][0]["message"].value("reasoning_content", std::string()));
  EXPECT_EQ(content, whole["choices"][0]["message"]["content"].is_string()
                         ? whole["choices"][0]["message"]["content"].get<std::string>()
                         : std::string());
}

TEST_F(ServeE2E, ContextOverflowIsA400AndTheServerKeepsServing) {
  const auto& conv = s_->golden["conversations"][0];
  auto err = post("/v1/chat/completions", {{"model", "serve-fixture"}, {"messages", conv["messages"]}, {"max_tokens", 5000}},
                  400);
  ASSERT_TRUE(err.is_object());
  EXPECT_EQ(err["error"]["code"], "context_length_exceeded");
  EXPECT_NE(err["error"]["message"].get<std::string>().find("1024"), std::string::npos) << err.dump();
  auto ok = post("/v1/chat/completions", {{"model", "serve-fixture"}, {"messages", conv["messages"]}, {"max_tokens", 4}});
  EXPECT_EQ(ok["usage"]["completion_tokens"], 4);
}

TEST_F(ServeE2E, StopStringsEndTheAnswerAndJsonlHasOneLinePerRequest) {
  const auto& conv = s_->golden["conversations"][1];
  auto [ids, hit_eos] = expected_ids(conv);
  std::string text = s_->tokenizer->decode(ids);
  // A piece of what the model will print: the first run of 3 printable ASCII characters after the start.
  std::string stop;
  for (size_t i = 2; i + 3 <= text.size() && stop.empty(); ++i)
    if (std::all_of(text.begin() + i, text.begin() + i + 3, [](char c) { return c > 32 && c < 127; }))
      stop = text.substr(i, 3);
  ASSERT_FALSE(stop.empty()) << text;
  auto r = post("/v1/completions", {{"model", "serve-fixture"}, {"prompt", conv["prompt_text"]}, {"max_tokens", 24},
                                    {"temperature", 0}, {"stop", stop}});
  EXPECT_EQ(r["choices"][0]["text"], text.substr(0, text.find(stop)));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  s_->http->flush_log();
  std::ifstream in(s_->dir.file("timings.jsonl"));
  int lines = 0;
  bool saw_stop_string = false;
  for (std::string line; std::getline(in, line); ++lines) {
    auto j = nlohmann::json::parse(line);
    EXPECT_TRUE(j.contains("request_id"));
    EXPECT_TRUE(j.contains("timings"));
    if (j["stop_reason"] == "stop_string") saw_stop_string = true;
  }
  EXPECT_GE(lines, 1);
  EXPECT_TRUE(saw_stop_string);
}

server::HttpServerConfig any_port() {
  server::HttpServerConfig c;
  c.port = 0;
  return c;
}

// A second front end on the fixture's engine with its own reasoning budgets: `flag` as --reasoning-budget gives it,
// `artifact` as an artifact's generation config does.
struct BudgetFrontEnd {
  BudgetFrontEnd(const server::EngineServiceConfig& sc, Engine& engine, const Tokenizer& tok, const Artifact& a)
      : service(engine, tok, ChatTemplate::from_template_text(a.metadata()["chat_template"].get<std::string>()), sc),
        http(any_port(), service),
        cli("127.0.0.1", http.start()) {
    cli.set_read_timeout(60, 0);
  }
  ~BudgetFrontEnd() { http.stop(); }
  server::EngineService service;
  server::HttpServer http;
  httplib::Client cli;
};

server::EngineServiceConfig budget_config(const Artifact& a, const Tokenizer& tok, std::optional<int64_t> flag,
                                          std::optional<int64_t> artifact) {
  server::EngineServiceConfig sc;
  sc.info.name = "serve-fixture";
  sc.info.max_context = 1024;
  sc.stop_ids = server::default_stop_ids(a.metadata()["generation"], tok);
  sc.default_reasoning_budget = flag;
  sc.artifact_reasoning_budget = artifact;
  return sc;
}

TEST_F(ServeE2E, ReasoningBudgetClosesTheThinkBlockAndTheAnswerFollows) {
  BudgetFrontEnd fe(budget_config(*s_->artifact, *s_->tokenizer, 5, std::nullopt), *s_->engine, *s_->tokenizer,
                    *s_->artifact);  // --reasoning-budget 5
  httplib::Client& cli = fe.cli;
  const auto& conv = s_->golden["conversations"][1];
  nlohmann::json body = {{"model", "serve-fixture"}, {"messages", conv["messages"]}, {"max_tokens", 24}, {"temperature", 0}};
  auto res = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto r = nlohmann::json::parse(res->body);
  const int64_t reasoning = r["usage"]["completion_tokens_details"]["reasoning_tokens"];
  const int64_t completion = r["usage"]["completion_tokens"];
  // 5 budget tokens, then the forced "\n</think>\n\n" (its newline and </think> still count as reasoning).
  EXPECT_GE(reasoning, 5);
  EXPECT_LE(reasoning, 8);
  EXPECT_GT(completion, reasoning) << "the answer continues after the forced </think>";
  // Without the budget the same request reasons for all 24 tokens.
  auto full = post("/v1/chat/completions", body);
  EXPECT_EQ(full["usage"]["completion_tokens_details"]["reasoning_tokens"], 24);
}

// The artifact's default budget (here 5, as if its generation config said so) applies when neither the request nor
// --reasoning-budget gives one; a request's reasoning_effort replaces it ("low": 1024, so the same request reasons on).
TEST_F(ServeE2E, ArtifactBudgetIsTheDefaultAndReasoningEffortReplacesIt) {
  BudgetFrontEnd fe(budget_config(*s_->artifact, *s_->tokenizer, std::nullopt, 5), *s_->engine, *s_->tokenizer,
                    *s_->artifact);
  httplib::Client& cli = fe.cli;
  const auto& conv = s_->golden["conversations"][1];
  nlohmann::json body = {{"model", "serve-fixture"}, {"messages", conv["messages"]}, {"max_tokens", 24}, {"temperature", 0}};
  auto reasoning_of = [&](const nlohmann::json& b) -> int64_t {
    auto res = cli.Post("/v1/chat/completions", b.dump(), "application/json");
    EXPECT_TRUE(res && res->status == 200) << (res ? res->body : "no response");
    if (!res || res->status != 200) return -1;
    return nlohmann::json::parse(res->body)["usage"]["completion_tokens_details"]["reasoning_tokens"];
  };
  const int64_t by_default = reasoning_of(body);
  EXPECT_GE(by_default, 5);
  EXPECT_LE(by_default, 8);
  body["reasoning_effort"] = "low";
  EXPECT_EQ(reasoning_of(body), 24);  // as without any budget (ReasoningBudgetClosesTheThinkBlockAndTheAnswerFollows)
}

// Issue 20: tools, an assistant's tool_calls (OpenAI's JSON-string arguments) and tool results go from the request
// body through the server into the chat template, keys in the client's order (zeta before alpha).
TEST_F(ServeE2E, ToolsAndToolCallHistoryReachTheTemplate) {
  const std::string body = R"({"model": "serve-fixture", "max_tokens": 4, "temperature": 0,
    "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object",
      "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}}}}],
    "messages": [{"role": "user", "content": "call f"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "f", "arguments": "{\"zeta\": \"z\", \"alpha\": 1}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "42"}]})";
  const server::ChatCompletionRequest req = server::parse_chat_request(nlohmann::ordered_json::parse(body));
  const server::GenerationRequest g = server::to_generation_request(req, "chatcmpl-x", {}, {});
  const std::string prompt = s_->tokenizer->decode(s_->service->build_prompt(g).ids);
  for (const std::string want :
       {R"({"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object", )"
        R"("properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}}}})",
        "<tool_call>\n<function=f>\n<parameter=zeta>\nz\n</parameter>\n<parameter=alpha>\n1\n</parameter>\n"
        "</function>\n</tool_call><|im_end|>",
        "<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>"})
    EXPECT_NE(prompt.find(want), std::string::npos) << want << "\n--- in ---\n" << prompt;
  httplib::Client cli("127.0.0.1", s_->port);
  cli.set_read_timeout(60, 0);
  auto res = cli.Post("/v1/chat/completions", body, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
}

}  // namespace
}  // namespace ninfer
