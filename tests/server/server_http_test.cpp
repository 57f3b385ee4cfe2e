// HTTP integration tests: every endpoint, streaming, reasoning split, usage, JSONL, disconnect, concurrency.
#include "tests/server/server_fixture.h"

#include <regex>

namespace ninfer::server::testing {
namespace {

TEST_F(ServerTest, HealthIs503WhileLoadingThen200) {
  FakeEngine::Config ec;
  ec.ready = false;
  start(ec);
  JsonResponse h = get("/health");
  EXPECT_EQ(h.status, 503);
  EXPECT_EQ(h.body["error"]["code"], "model_loading");
  JsonResponse chat = post("/v1/chat/completions", chat_body("hi"));
  EXPECT_EQ(chat.status, 503);
  EXPECT_EQ(chat.body["error"]["type"], "service_unavailable_error");
  EXPECT_EQ(get("/v1/models").status, 503);
  EXPECT_EQ(get("/metrics").status, 200);  // metrics answer while loading
  engine_->set_ready(true);
  h = get("/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.body["status"], "ok");
  EXPECT_EQ(post("/v1/chat/completions", chat_body("hi")).status, 200);
}

TEST_F(ServerTest, Models) {
  HttpServerConfig sc;
  sc.served_model_name = "qwen-served";
  start({}, sc);
  JsonResponse m = get("/v1/models");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.body["object"], "list");
  ASSERT_EQ(m.body["data"].size(), 1u);
  EXPECT_EQ(m.body["data"][0]["id"], "qwen-served");
  EXPECT_EQ(m.body["data"][0]["max_model_len"], 4096);
  JsonResponse one = get("/v1/models/qwen-served");
  EXPECT_EQ(one.status, 200);
  EXPECT_EQ(one.body["id"], "qwen-served");
  JsonResponse missing = get("/v1/models/gpt-4");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body["error"]["code"], "model_not_found");
  // The served name is the one requests must use.
  EXPECT_EQ(post("/v1/chat/completions", chat_body("x", {{"model", "qwen-served"}})).status, 200);
  EXPECT_EQ(post("/v1/chat/completions", chat_body("x", {{"model", "fake-model"}})).status, 404);
}

TEST_F(ServerTest, ChatNonStreamSplitsReasoningAndReportsUsageAndTimings) {
  start();
  JsonResponse r = post("/v1/chat/completions", chat_body("tell me a story", {{"seed", 42}}));
  ASSERT_EQ(r.status, 200) << r.raw;
  const json& b = r.body;
  EXPECT_EQ(b["object"], "chat.completion");
  EXPECT_TRUE(std::regex_match(b["id"].get<std::string>(), std::regex("chatcmpl-[0-9a-f]{24}")));
  EXPECT_EQ(r.headers.find("X-Request-Id")->second, b["id"]);
  EXPECT_EQ(b["model"], "fake-model");
  EXPECT_GT(b["created"].get<int64_t>(), 1700000000);
  const json& msg = b["choices"][0]["message"];
  EXPECT_EQ(msg["role"], "assistant");
  const std::string reasoning = msg["reasoning_content"];
  EXPECT_EQ(reasoning.rfind("Hmm,", 0), 0u) << reasoning;
  EXPECT_EQ(msg["reasoning"], reasoning);
  const std::string content = msg["content"];
  EXPECT_FALSE(content.empty());
  EXPECT_EQ(content.find("Hmm"), std::string::npos);  // no reasoning text leaks into content
  EXPECT_EQ(b["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(b["choices"][0]["logprobs"].is_null());

  // usage agrees with the script: reasoning words + hidden </think> + content words
  const json& u = b["usage"];
  const int64_t reasoning_words = std::count(reasoning.begin(), reasoning.end(), ' ') + 1;
  const int64_t content_words = std::count(content.begin(), content.end(), ' ') + 1;
  EXPECT_EQ(u["completion_tokens_details"]["reasoning_tokens"], reasoning_words + 1);
  EXPECT_EQ(u["completion_tokens"], reasoning_words + 1 + content_words);
  EXPECT_EQ(u["prompt_tokens"], 4 + 4);  // 4 words + 4 template tokens per message
  EXPECT_EQ(u["total_tokens"], u["prompt_tokens"].get<int64_t>() + u["completion_tokens"].get<int64_t>());
  EXPECT_EQ(u["prompt_tokens_details"]["cached_tokens"], 0);
  const json& t = b["timings"];
  for (const char* k : {"queue_s", "prefill_s", "decode_s", "ttft_s", "total_s"}) {
    EXPECT_TRUE(t[k].is_number()) << k;
    EXPECT_GE(t[k].get<double>(), 0.0) << k;
  }
  EXPECT_GE(t["total_s"].get<double>(), t["decode_s"].get<double>());
  EXPECT_EQ(t["predicted_n"], u["completion_tokens"]);
  EXPECT_EQ(t["stop_reason"], "eos");

  // What the engine was asked: defaults from the model, fields from the request.
  std::vector<GenerationRequest> sub = engine_->submitted();
  ASSERT_EQ(sub.size(), 1u);
  EXPECT_EQ(sub[0].request_id, b["id"]);
  EXPECT_EQ(sub[0].sampling.top_k, 20);
  EXPECT_DOUBLE_EQ(sub[0].sampling.temperature, 0.7);
  EXPECT_EQ(*sub[0].sampling.seed, 42u);
  EXPECT_FALSE(sub[0].max_tokens);

  // One JSONL line with the same figures.
  std::vector<json> lines = log_lines();
  ASSERT_EQ(lines.size(), 1u);
  const json& l = lines[0];
  EXPECT_EQ(l["request_id"], b["id"]);
  EXPECT_EQ(l["model"], "fake-model");
  EXPECT_EQ(l["prompt_tokens"], u["prompt_tokens"]);
  EXPECT_EQ(l["completion_tokens"], u["completion_tokens"]);
  EXPECT_EQ(l["reasoning_tokens"], u["completion_tokens_details"]["reasoning_tokens"]);
  EXPECT_EQ(l["cached_tokens"], 0);
  EXPECT_EQ(l["finish_reason"], "stop");
  EXPECT_EQ(l["stop_reason"], "eos");
  EXPECT_EQ(l["empty_content"], false);
  EXPECT_EQ(l["endpoint"], "chat.completions");
  EXPECT_EQ(l["stream"], false);
  EXPECT_EQ(l["http_status"], 200);
  for (const char* k : {"queue_s", "prefill_s", "decode_s", "ttft_s", "total_s"})
    EXPECT_DOUBLE_EQ(l["timings"][k].get<double>(), t[k].get<double>()) << k;
  EXPECT_EQ(l["settings"]["kv_dtype"], "bf16");
  EXPECT_EQ(l["settings"]["max_context"], 4096);
  EXPECT_FALSE(l.contains("spec"));
}

TEST_F(ServerTest, ThinkingOffAndMaxTokens) {
  start();
  JsonResponse off = post("/v1/chat/completions",
                          chat_body("no thinking please", {{"chat_template_kwargs", {{"enable_thinking", false}}}}));
  ASSERT_EQ(off.status, 200);
  EXPECT_TRUE(off.body["choices"][0]["message"]["reasoning_content"].is_null());
  EXPECT_EQ(off.body["usage"]["completion_tokens_details"]["reasoning_tokens"], 0);
  JsonResponse none = post("/v1/chat/completions", chat_body("effort", {{"reasoning_effort", "none"}}));
  EXPECT_TRUE(none.body["choices"][0]["message"]["reasoning_content"].is_null());

  // The whole budget goes to reasoning: length, empty content (the seed's "正文为空" case).
  JsonResponse cut = post("/v1/chat/completions", chat_body("long think", {{"max_completion_tokens", 3}}));
  ASSERT_EQ(cut.status, 200);
  EXPECT_EQ(cut.body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(cut.body["usage"]["completion_tokens"], 3);
  EXPECT_EQ(cut.body["choices"][0]["message"]["content"], "");
  std::vector<json> lines = log_lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2]["stop_reason"], "output_limit");
  EXPECT_EQ(lines[2]["empty_content"], true);
  EXPECT_EQ(lines[2]["max_tokens"], 3);
}

TEST_F(ServerTest, ChatStreamMatchesNonStream) {
  start();
  json body = chat_body("stream me", {{"seed", 7}});
  JsonResponse whole = post("/v1/chat/completions", body);
  ASSERT_EQ(whole.status, 200);

  json sbody = body;
  sbody["stream"] = true;
  StreamResponse s = post_stream("/v1/chat/completions", sbody);
  EXPECT_EQ(s.status, 200);
  EXPECT_TRUE(s.done);
  EXPECT_TRUE(s.completed);
  ASSERT_GE(s.events.size(), 3u);
  EXPECT_EQ(s.events.front()["choices"][0]["delta"]["role"], "assistant");
  std::string id = s.events.front()["id"];
  for (const json& e : s.events) {
    EXPECT_EQ(e["object"], "chat.completion.chunk");
    EXPECT_EQ(e["id"], id);
    EXPECT_FALSE(e.contains("usage"));  // no include_usage
  }
  EXPECT_EQ(s.reasoning(), whole.body["choices"][0]["message"]["reasoning_content"]);
  EXPECT_EQ(s.content(), whole.body["choices"][0]["message"]["content"]);
  EXPECT_EQ(s.finish_reason(), "stop");
  const json& last = s.events.back();
  EXPECT_TRUE(last["choices"][0]["delta"].empty());
  EXPECT_TRUE(last.contains("timings"));  // llama.cpp puts timings on the last chunk
  // reasoning deltas carry both names
  bool saw_reasoning = false;
  for (const json& e : s.events) {
    const json& d = e["choices"][0]["delta"];
    if (d.contains("reasoning_content")) {
      EXPECT_EQ(d["reasoning"], d["reasoning_content"]);
      EXPECT_FALSE(d.contains("content"));
      saw_reasoning = true;
    }
  }
  EXPECT_TRUE(saw_reasoning);
}

TEST_F(ServerTest, ChatStreamIncludeUsage) {
  start();
  StreamResponse s = post_stream("/v1/chat/completions",
                                 chat_body("usage please", {{"stream", true}, {"stream_options", {{"include_usage", true}}}}));
  ASSERT_TRUE(s.done);
  ASSERT_GE(s.events.size(), 2u);
  const json& u = s.events.back();
  EXPECT_TRUE(u["choices"].empty());
  EXPECT_GT(u["usage"]["completion_tokens"].get<int64_t>(), 0);
  EXPECT_GT(u["usage"]["completion_tokens_details"]["reasoning_tokens"].get<int64_t>(), 0);
  EXPECT_TRUE(u.contains("timings"));
  for (size_t i = 0; i + 1 < s.events.size(); ++i) {
    EXPECT_TRUE(s.events[i].contains("usage") && s.events[i]["usage"].is_null()) << s.events[i].dump();
    EXPECT_FALSE(s.events[i].contains("timings"));
  }
  EXPECT_EQ(s.events[s.events.size() - 2]["choices"][0]["finish_reason"], "stop");
}

TEST_F(ServerTest, StopStringsAcrossTokensNonStreamAndStream) {
  start();
  json body = chat_body("stop test", {{"seed", 3}, {"chat_template_kwargs", {{"enable_thinking", false}}}});
  JsonResponse full = post("/v1/chat/completions", body);
  const std::string content = full.body["choices"][0]["message"]["content"];
  size_t second_space = content.find(' ', content.find(' ') + 1);
  ASSERT_NE(second_space, std::string::npos) << content;
  // A stop string that starts inside one token and ends inside the next.
  const std::string stop = content.substr(second_space - 2, 4);
  const std::string expected = content.substr(0, content.find(stop));
  body["stop"] = json::array({"never-there", stop});
  JsonResponse r = post("/v1/chat/completions", body);
  EXPECT_EQ(r.body["choices"][0]["message"]["content"], expected);
  EXPECT_EQ(r.body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r.body["timings"]["stop_reason"], "stop_string");
  body["stream"] = true;
  StreamResponse s = post_stream("/v1/chat/completions", body);
  EXPECT_EQ(s.content(), expected);
  EXPECT_EQ(s.finish_reason(), "stop");
  std::vector<json> lines = log_lines();
  EXPECT_EQ(lines.back()["stop_reason"], "stop_string");
  EXPECT_EQ(lines.back()["stop_string"], stop);
}

TEST_F(ServerTest, Logprobs) {
  start();
  JsonResponse r = post("/v1/chat/completions", chat_body("lp", {{"logprobs", true}, {"top_logprobs", 2}}));
  ASSERT_EQ(r.status, 200) << r.raw;
  const json& lp = r.body["choices"][0]["logprobs"]["content"];
  EXPECT_EQ(lp.size(), r.body["usage"]["completion_tokens"].get<size_t>());
  EXPECT_EQ(lp[0]["top_logprobs"].size(), 2u);
  EXPECT_LT(lp[0]["logprob"].get<double>(), 0.0);
  StreamResponse s = post_stream("/v1/chat/completions", chat_body("lp", {{"logprobs", true}, {"stream", true}}));
  size_t n = 0;
  for (const json& e : s.events)
    if (!e["choices"].empty() && e["choices"][0]["logprobs"].is_object()) n += e["choices"][0]["logprobs"]["content"].size();
  EXPECT_EQ(n, lp.size());
}

TEST_F(ServerTest, CompletionsNonStreamAndStream) {
  start();
  JsonResponse r = post("/v1/completions", json{{"model", "fake-model"}, {"prompt", "once upon a time"}, {"seed", 1}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["object"], "text_completion");
  EXPECT_TRUE(std::regex_match(r.body["id"].get<std::string>(), std::regex("cmpl-[0-9a-f]{24}")));
  const std::string text = r.body["choices"][0]["text"];
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(r.body["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(r.body["usage"]["completion_tokens_details"]["reasoning_tokens"], 0);  // raw prompt: no split
  std::vector<GenerationRequest> sub = engine_->submitted();
  EXPECT_EQ(sub.back().kind, PromptKind::kText);
  EXPECT_EQ(*sub.back().max_tokens, 16);  // OpenAI's completions default

  StreamResponse s = post_stream("/v1/completions", json{{"prompt", "once upon a time"}, {"seed", 1}, {"stream", true},
                                                         {"stream_options", {{"include_usage", true}}}});
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.content(), text);
  EXPECT_EQ(s.events.front()["object"], "text_completion");
  EXPECT_TRUE(s.events.back()["choices"].empty());
  EXPECT_EQ(s.events.back()["usage"]["completion_tokens"], r.body["usage"]["completion_tokens"]);

  JsonResponse tok = post("/v1/completions", json{{"prompt", json::array({1, 2, 3})}, {"max_tokens", 2}});
  ASSERT_EQ(tok.status, 200) << tok.raw;
  EXPECT_EQ(tok.body["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(tok.body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(engine_->submitted().back().prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
}

TEST_F(ServerTest, GreedyFlagForcesGreedy) {
  HttpServerConfig sc;
  sc.force_greedy = true;
  sc.reasoning_budget = 64;
  start({}, sc);
  ASSERT_EQ(post("/v1/chat/completions", chat_body("g", {{"temperature", 1.5}})).status, 200);
  GenerationRequest g = engine_->submitted().back();
  EXPECT_TRUE(g.sampling.greedy);
  EXPECT_EQ(*g.reasoning_budget, 64);
}

TEST_F(ServerTest, MetricsEndpoint) {
  FakeEngine::Config ec;
  ec.speculate = true;
  start(ec);
  ASSERT_EQ(post("/v1/chat/completions", chat_body("a")).status, 200);
  ASSERT_EQ(post("/v1/chat/completions", chat_body("b", {{"max_tokens", 2}})).status, 200);
  ASSERT_EQ(post("/v1/chat/completions", std::string("{bad")).status, 400);
  auto c = client();
  auto res = c.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  const std::string& t = res->body;
  EXPECT_NE(t.find("vllm:request_success_total{finished_reason=\"stop\",model_name=\"fake-model\"} 1"), std::string::npos) << t;
  EXPECT_NE(t.find("vllm:request_success_total{finished_reason=\"length\",model_name=\"fake-model\"} 1"), std::string::npos);
  EXPECT_NE(t.find("vllm:time_to_first_token_seconds_count{model_name=\"fake-model\"} 2"), std::string::npos);
  EXPECT_NE(t.find("vllm:e2e_request_latency_seconds_count{model_name=\"fake-model\"} 2"), std::string::npos);
  EXPECT_NE(t.find("ninfer:kv_blocks_total{model_name=\"fake-model\"} 100000"), std::string::npos);
  // Some series settle just after the client has its answer: the status counter is bumped by httplib's
  // logger after the response is written, and the engine drops a finished sequence after on_finish.
  auto soon = [&](const std::string& sample) {
    return eventually([&] {
      auto again = c.Get("/metrics");
      return again && again->body.find(sample) != std::string::npos;
    });
  };
  EXPECT_TRUE(soon("ninfer:http_responses_total{code=\"400\",model_name=\"fake-model\"} 1"));
  EXPECT_TRUE(soon("vllm:num_requests_running{model_name=\"fake-model\"} 0"));
  EXPECT_TRUE(soon("vllm:num_requests_waiting{model_name=\"fake-model\"} 0"));
  EXPECT_NE(t.find("vllm:spec_decode_num_draft_tokens_total{model_name=\"fake-model\"}"), std::string::npos);
  EXPECT_EQ(t.find("vllm:spec_decode_num_drafts_total{model_name=\"fake-model\"} 0\n"), std::string::npos);
  // The speculative figures also reach the JSONL and the response.
  std::vector<json> lines = log_lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["spec"]["method"], "mtp");
  EXPECT_GT(lines[0]["spec"]["drafted"].get<int64_t>(), 0);
}

TEST_F(ServerTest, ClientDisconnectMidStreamCancelsAndFreesKv) {
  start();
  StreamResponse s = post_stream("/v1/chat/completions", chat_body("__endless__ go", {{"stream", true}}), {},
                                 [](const StreamResponse& r) { return r.events.size() < 4; });
  EXPECT_FALSE(s.completed);  // the client hung up
  EXPECT_FALSE(s.done);
  ASSERT_TRUE(eventually([&] { return engine_->cancelled_finishes().size() == 1; }))
      << "the engine never saw the cancel";
  EXPECT_TRUE(eventually([&] { return engine_->active() == 0 && engine_->load().kv_blocks_used == 0; }));
  EXPECT_TRUE(eventually([&] { return server_->in_flight() == 0; }));
  std::vector<json> lines = log_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["stop_reason"], "cancelled");
  EXPECT_EQ(lines[0]["finish_reason"], "abort");
  EXPECT_EQ(lines[0]["http_status"], 499);
  expect_still_serving();
}

TEST_F(ServerTest, ClientDisconnectWhileEngineIsSilentIsFoundByThePing) {
  HttpServerConfig sc;
  sc.sse_ping_interval = std::chrono::milliseconds(20);
  start({}, sc);
  auto t0 = std::chrono::steady_clock::now();
  StreamResponse s = post_stream("/v1/chat/completions", chat_body("__silent__", {{"stream", true}}), {},
                                 [](const StreamResponse& r) { return r.events.empty(); });  // hang up after the role chunk
  EXPECT_FALSE(s.completed);
  ASSERT_TRUE(eventually([&] { return engine_->cancelled_finishes().size() == 1; }));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_TRUE(eventually([&] { return engine_->load().kv_blocks_used == 0; }));
  expect_still_serving();
}

TEST_F(ServerTest, NonStreamingClientThatGivesUpCancelsItsRequest) {
  FakeEngine::Config ec;
  ec.step = std::chrono::microseconds(1000);  // the endless request would run ~4 s to the context
  start(ec);
  auto c = client();
  c.set_read_timeout(0, 150 * 1000);  // the client gives up after 150 ms and closes the connection
  auto t0 = std::chrono::steady_clock::now();
  auto res = c.Post("/v1/chat/completions", chat_body("__endless__ long answer").dump(), "application/json");
  EXPECT_FALSE(res);
  ASSERT_TRUE(eventually([&] { return engine_->cancelled_finishes().size() == 1; }))
      << "the engine never saw the cancel";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_TRUE(eventually([&] { return engine_->load().kv_blocks_used == 0 && server_->in_flight() == 0; }));
  std::vector<json> lines = log_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["stop_reason"], "cancelled");
  EXPECT_EQ(lines[0]["stream"], false);
  expect_still_serving();
}

TEST_F(ServerTest, KeepAliveCommentsWhileTheEngineIsSilent) {
  HttpServerConfig sc;
  sc.sse_ping_interval = std::chrono::milliseconds(10);
  start({}, sc);
  StreamResponse s = post_stream("/v1/chat/completions", chat_body("__silent__", {{"stream", true}}), {},
                                 [](const StreamResponse& r) { return r.comments.size() < 3; });
  EXPECT_EQ(s.status, 200);
  ASSERT_EQ(s.comments.size(), 3u);
  EXPECT_EQ(s.comments[0], ": keep-alive");
  ASSERT_EQ(s.events.size(), 1u);  // only the role chunk: the engine said nothing
  EXPECT_TRUE(eventually([&] { return engine_->cancelled_finishes().size() == 1; }));
}

TEST_F(ServerTest, ConcurrentStreamingClientsGetTheSameOutputAsAlone) {
  FakeEngine::Config ec;
  ec.step = std::chrono::microseconds(200);
  start(ec);
  constexpr int kClients = 32;
  constexpr int kPrompts = 4;
  auto body_for = [&](int p) {
    return chat_body("__endless__ prompt number " + std::to_string(p), {{"stream", true}, {"seed", 1234}, {"max_tokens", 48}});
  };
  std::vector<StreamResponse> alone(kPrompts);
  for (int p = 0; p < kPrompts; ++p) {
    alone[p] = post_stream("/v1/chat/completions", body_for(p));
    ASSERT_TRUE(alone[p].done);
    ASSERT_EQ(alone[p].finish_reason(), "length");
  }
  EXPECT_NE(alone[0].content(), alone[1].content());  // the prompts really differ

  std::vector<StreamResponse> together(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i)
    threads.emplace_back([&, i] { together[i] = post_stream("/v1/chat/completions", body_for(i % kPrompts)); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kClients; ++i) {
    const StreamResponse& a = alone[i % kPrompts];
    const StreamResponse& b = together[i];
    EXPECT_EQ(b.status, 200) << "client " << i << ": " << b.error;
    EXPECT_TRUE(b.done) << "client " << i;
    EXPECT_EQ(b.reasoning(), a.reasoning()) << "client " << i;
    EXPECT_EQ(b.content(), a.content()) << "client " << i;
    EXPECT_EQ(b.finish_reason(), "length") << "client " << i;
  }
  EXPECT_EQ(log_lines().size(), static_cast<size_t>(kPrompts + kClients));
  EXPECT_TRUE(eventually([&] { return engine_->load().kv_blocks_used == 0; }));
}

TEST_F(ServerTest, StopWithAStreamInFlightCancelsItAndRecordsIt) {
  start();
  std::thread t([&] {
    StreamResponse s = post_stream("/v1/chat/completions", chat_body("__silent__", {{"stream", true}}));
    EXPECT_EQ(s.status, 200);
  });
  ASSERT_TRUE(eventually([&] { return engine_->active() == 1; }));
  auto t0 = std::chrono::steady_clock::now();
  server_->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  t.join();
  EXPECT_TRUE(eventually([&] { return engine_->cancelled_finishes().size() == 1; }));
  std::ifstream in(log_path_);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(json::parse(line)["stop_reason"], "cancelled");
}

}  // namespace
}  // namespace ninfer::server::testing
