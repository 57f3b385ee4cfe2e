// n > 1 over HTTP (issue 20): n choices per request through the fake engine, non-streaming and streaming — indices,
// usage sums, per-choice finish reasons, seeds, cancellation of every choice, the bound on n, tools, the JSONL line.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "server/choice_group.h"
#include "tests/server/server_fixture.h"
#include "tests/server/tool_call_recordings.h"

namespace ninfer::server::testing {
namespace {

// A stream's chunks gathered per choice index: content, reasoning, finish_reason, and the chunks' order.
struct PerChoice {
  std::map<int, std::string> content, reasoning, finish, role;
  std::map<int, json> calls;  // index -> tool_calls accumulated by call index
  int usage_chunks = 0;
  json usage;
};

PerChoice per_choice(const StreamResponse& s) {
  PerChoice p;
  for (const json& e : s.events) {
    if (e.contains("usage") && e["usage"].is_object()) {
      p.usage_chunks++;
      p.usage = e["usage"];
    }
    if (!e.contains("choices")) continue;
    for (const json& c : e["choices"]) {
      const int i = c["index"].get<int>();
      if (c.contains("text")) p.content[i] += c["text"].get<std::string>();
      if (c.contains("delta")) {
        const json& d = c["delta"];
        if (d.contains("role")) p.role[i] = d["role"];
        if (d.contains("content") && d["content"].is_string()) p.content[i] += d["content"].get<std::string>();
        if (d.contains("reasoning_content")) p.reasoning[i] += d["reasoning_content"].get<std::string>();
        if (d.contains("tool_calls"))
          for (const json& tc : d["tool_calls"]) {
            const std::string k = std::to_string(tc["index"].get<int>());
            json& acc = p.calls[i][k];
            if (tc.contains("id")) acc["name"] = tc["function"]["name"];
            if (tc.contains("function") && tc["function"].contains("arguments"))
              acc["arguments"] = acc.value("arguments", std::string()) + tc["function"]["arguments"].get<std::string>();
          }
      }
      if (c["finish_reason"].is_string()) p.finish[i] = c["finish_reason"];
    }
  }
  return p;
}

TEST(ChoiceSeed, ChoiceZeroKeepsTheSeedAndTheOthersDiffer) {
  EXPECT_EQ(choice_seed(42, 0), 42u);
  std::set<uint64_t> seen;
  for (int i = 0; i < 16; ++i) seen.insert(choice_seed(42, i));
  EXPECT_EQ(seen.size(), 16u);
  EXPECT_EQ(choice_seed(42, 3), choice_seed(42, 3));
  GenerationRequest r;
  EXPECT_FALSE(choice_request(r, 2).sampling.seed);  // no seed: each choice samples with its own randomness
  r.sampling.seed = 7;
  EXPECT_EQ(*choice_request(r, 2).sampling.seed, choice_seed(7, 2));
}

TEST_F(ServerTest, ChatNReturnsNChoicesWithSummedUsage) {
  start();
  JsonResponse one = post("/v1/chat/completions", chat_body("tell me things", {{"seed", 5}}));
  ASSERT_EQ(one.status, 200) << one.raw;
  JsonResponse r = post("/v1/chat/completions", chat_body("tell me things", {{"n", 3}, {"seed", 5}}));
  ASSERT_EQ(r.status, 200) << r.raw;
  const json& choices = r.body["choices"];
  ASSERT_EQ(choices.size(), 3u);
  int64_t summed = 0;
  std::set<std::string> contents;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(choices[i]["index"], i);
    EXPECT_EQ(choices[i]["finish_reason"], "stop");
    contents.insert(choices[i]["message"]["content"].get<std::string>());
  }
  EXPECT_EQ(contents.size(), 3u) << "derived seeds give each choice its own sample";
  // choice 0 runs with the request's seed: it is the n = 1 answer
  EXPECT_EQ(choices[0]["message"]["content"], one.body["choices"][0]["message"]["content"]);
  const json& u = r.body["usage"];
  EXPECT_EQ(u["prompt_tokens"], one.body["usage"]["prompt_tokens"]);  // counted once
  std::vector<json> lines = log_lines();
  ASSERT_EQ(lines.size(), 2u);  // one line per HTTP request
  const json& line = lines[1];
  EXPECT_EQ(line["n"], 3);
  ASSERT_EQ(line["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(line["choices"][i]["index"], i);
    summed += line["choices"][i]["completion_tokens"].get<int64_t>();
  }
  EXPECT_EQ(u["completion_tokens"].get<int64_t>(), summed);
  EXPECT_EQ(line["completion_tokens"].get<int64_t>(), summed);
  EXPECT_EQ(u["total_tokens"].get<int64_t>(), summed + u["prompt_tokens"].get<int64_t>());
  EXPECT_FALSE(lines[0].contains("choices"));  // n = 1 lines are as before

  // the same seeded request again: the same n answers
  JsonResponse again = post("/v1/chat/completions", chat_body("tell me things", {{"n", 3}, {"seed", 5}}));
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(again.body["choices"], r.body["choices"]);
  EXPECT_EQ(engine_->submitted().size(), 7u);  // 1 + 3 + 3 engine requests
}

TEST_F(ServerTest, PerChoiceFinishReasonsAndStopStrings) {
  start();
  // max_tokens cuts some choices (length) but not necessarily all; each choice reports its own reason
  JsonResponse r = post("/v1/completions", json{{"prompt", "count some words"}, {"n", 4}, {"seed", 11}, {"max_tokens", 7},
                                               {"logprobs", 0}});
  ASSERT_EQ(r.status, 200) << r.raw;
  ASSERT_EQ(r.body["choices"].size(), 4u);
  std::vector<json> lines = log_lines();
  ASSERT_EQ(lines.size(), 1u);
  int64_t summed = 0;
  for (int i = 0; i < 4; ++i) {
    const json& c = r.body["choices"][i];
    EXPECT_EQ(c["index"], i);
    EXPECT_EQ(c["finish_reason"], lines[0]["choices"][i]["finish_reason"]);
    const int64_t toks = lines[0]["choices"][i]["completion_tokens"];
    EXPECT_LE(toks, 7);
    EXPECT_EQ(c["logprobs"]["tokens"].size(), static_cast<size_t>(toks));  // each choice its own logprobs
    summed += toks;
  }
  EXPECT_EQ(r.body["usage"]["completion_tokens"].get<int64_t>(), summed);
  for (const GenerationRequest& g : engine_->submitted()) {
    EXPECT_EQ(g.max_tokens, 7);
    EXPECT_TRUE(g.sampling.logprobs);
  }
}

TEST_F(ServerTest, ChatNStreamTagsChunksWithTheirChoice) {
  FakeEngine::Config ec;
  ec.prefix_reuse = true;  // choices 1.. are submitted after choice 0's first output
  start(ec);
  JsonResponse ref = post("/v1/chat/completions", chat_body("stream me", {{"n", 3}, {"seed", 9}}));
  ASSERT_EQ(ref.status, 200);
  StreamResponse s = post_stream("/v1/chat/completions",
                                 chat_body("stream me", {{"n", 3}, {"seed", 9}, {"stream", true},
                                                          {"stream_options", {{"include_usage", true}}}}));
  ASSERT_TRUE(s.done);
  PerChoice p = per_choice(s);
  ASSERT_EQ(p.finish.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(p.role[i], "assistant");
    EXPECT_EQ(p.content[i], ref.body["choices"][i]["message"]["content"]) << i;
    EXPECT_EQ(p.reasoning[i], ref.body["choices"][i]["message"]["reasoning_content"]) << i;
    EXPECT_EQ(p.finish[i], "stop");
  }
  EXPECT_EQ(p.usage_chunks, 1);  // one usage chunk for the request, last
  EXPECT_TRUE(s.events.back()["choices"].empty());
  EXPECT_EQ(p.usage["completion_tokens"], ref.body["usage"]["completion_tokens"]);
  EXPECT_EQ(p.usage["prompt_tokens"], ref.body["usage"]["prompt_tokens"]);
  // each choice's finish chunk comes once
  int finish_chunks = 0;
  for (const json& e : s.events)
    for (const json& c : e["choices"]) finish_chunks += c["finish_reason"].is_string();
  EXPECT_EQ(finish_chunks, 3);

  StreamResponse comp = post_stream("/v1/completions", json{{"prompt", "stream me"}, {"n", 2}, {"seed", 9},
                                                            {"stream", true}, {"max_tokens", 5}});
  ASSERT_TRUE(comp.done);
  PerChoice pc = per_choice(comp);
  EXPECT_EQ(pc.finish.size(), 2u);
  EXPECT_EQ(pc.usage_chunks, 0);
  EXPECT_NE(pc.content[0], pc.content[1]);
}

TEST_F(ServerTest, ClientDisconnectCancelsEveryChoice) {
  start();
  StreamResponse s = post_stream("/v1/chat/completions", chat_body("__endless__ go", {{"stream", true}, {"n", 3}}), {},
                                 [](const StreamResponse& r) { return r.events.size() < 12; });
  EXPECT_FALSE(s.completed);
  ASSERT_TRUE(eventually([&] { return engine_->cancelled_finishes().size() == 3; }))
      << engine_->cancelled_finishes().size() << " of 3 choices cancelled";
  EXPECT_TRUE(eventually([&] { return engine_->active() == 0 && server_->in_flight() == 0; }));
  std::vector<json> lines = log_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["stop_reason"], "cancelled");
  EXPECT_EQ(lines[0]["http_status"], 499);
  EXPECT_EQ(lines[0]["choices"].size(), 3u);

  // non-streaming: the client gives up, every choice is cancelled
  auto c = client();
  c.set_read_timeout(0, 150 * 1000);
  auto res = c.Post("/v1/chat/completions", chat_body("__endless__ long", {{"n", 2}}).dump(), "application/json");
  EXPECT_FALSE(res);
  ASSERT_TRUE(eventually([&] { return engine_->cancelled_finishes().size() == 5; }));
  EXPECT_TRUE(eventually([&] { return engine_->active() == 0 && server_->in_flight() == 0; }));
  expect_still_serving();
}

TEST_F(ServerTest, AFailingChoiceFailsTheRequestAndCancelsTheOthers) {
  start();
  JsonResponse r = post("/v1/chat/completions", chat_body("__fail__ now", {{"n", 3}}));
  EXPECT_EQ(r.status, 500) << r.raw;
  EXPECT_TRUE(eventually([&] { return engine_->active() == 0 && server_->in_flight() == 0; }));
  std::vector<json> lines = log_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["stop_reason"], "error");
  expect_still_serving();
}

TEST_F(ServerTest, NOutOfRangeIsRefused) {
  start();
  for (const json& n : {json(0), json(17), json(-1)}) {
    JsonResponse r = post("/v1/chat/completions", chat_body("x", {{"n", n}}));
    EXPECT_EQ(r.status, 400) << n;
    EXPECT_EQ(r.body["error"]["param"], "n");
    EXPECT_EQ(r.body["error"]["code"], "invalid_value");
  }
  JsonResponse c = post("/v1/completions", json{{"prompt", "x"}, {"n", 17}});
  EXPECT_EQ(c.status, 400);
  EXPECT_NE(c.body["error"]["message"].get<std::string>().find("at most 16"), std::string::npos) << c.raw;
  EXPECT_EQ(post("/v1/chat/completions", chat_body("x", {{"n", 16}})).status, 200);
  EXPECT_TRUE(engine_->submitted().size() == 16u);
}

TEST_F(ServerTest, NChoicesTakeNInFlightSlots) {
  HttpServerConfig sc;
  sc.max_in_flight = 4;
  sc.max_n = 4;
  start({}, sc);
  std::thread hold([&] {
    post("/v1/chat/completions", chat_body("__silent__", {{"n", 3}}));
  });
  ASSERT_TRUE(eventually([&] { return server_->in_flight() == 1; }));
  JsonResponse r = post("/v1/chat/completions", chat_body("x", {{"n", 2}}));  // 3 + 2 > 4
  EXPECT_EQ(r.status, 429) << r.raw;
  EXPECT_EQ(post("/v1/chat/completions", chat_body("x")).status, 200);  // 3 + 1 fits
  server_->stop();
  hold.join();
}

TEST_F(ServerTest, NWithToolsParsesEachChoice) {
  start();
  json body = chat_body("__tool:xml_two__ please", {{"tools", json::parse(kRecordedTools)}, {"n", 2}});
  JsonResponse r = post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.raw;
  ASSERT_EQ(r.body["choices"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const json& c = r.body["choices"][i];
    EXPECT_EQ(c["finish_reason"], "tool_calls");
    ASSERT_EQ(c["message"]["tool_calls"].size(), 2u);
    EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(c["message"]["tool_calls"][1]["function"]["name"], "get_time");
  }
  body["stream"] = true;
  StreamResponse s = post_stream("/v1/chat/completions", body);
  ASSERT_TRUE(s.done);
  PerChoice p = per_choice(s);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(p.finish[i], "tool_calls");
    ASSERT_EQ(p.calls[i].size(), 2u) << p.calls[i].dump();
    EXPECT_EQ(p.calls[i]["0"]["name"], "get_weather");
    EXPECT_EQ(json::parse(p.calls[i]["0"]["arguments"].get<std::string>()), json::parse(R"({"city":"Paris"})"));
  }
  // forced tool calls: every choice gets its own request (its own constraint instance in the real engine)
  json forced = chat_body("__tool:xml_single__ please", {{"tools", json::parse(kRecordedTools)}, {"n", 3},
                                                          {"tool_choice", "required"}});
  const size_t before = engine_->submitted().size();
  EXPECT_EQ(post("/v1/chat/completions", forced).status, 200);
  ASSERT_EQ(engine_->submitted().size(), before + 3);
  for (size_t i = before; i < before + 3; ++i)
    EXPECT_EQ(engine_->submitted()[i].tool_choice.mode, ToolChoiceMode::kRequired);
}

TEST_F(ServerTest, ChoicesAfterTheFirstWaitForItsPromptWithPrefixReuse) {
  FakeEngine::Config ec;
  ec.prefix_reuse = true;
  start(ec);
  std::thread hold([&] { post("/v1/chat/completions", chat_body("__silent__", {{"n", 3}})); });
  ASSERT_TRUE(eventually([&] { return server_->in_flight() == 1 && engine_->submitted().size() == 1u; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(engine_->submitted().size(), 1u) << "choice 0 has no output yet: the others are held back";
  server_->stop();  // cancels choice 0; the held-back choices are never submitted
  hold.join();
  EXPECT_EQ(engine_->submitted().size(), 1u);
  std::vector<json> lines = log_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["stop_reason"], "cancelled");
  EXPECT_EQ(lines[0]["choices"].size(), 1u);  // only the choice that ran
}

TEST_F(ServerTest, AChoiceTheEngineRefusesLaterIs429AndCancelsTheRest) {
  FakeEngine::Config ec;
  ec.prefix_reuse = true;  // choice 0 alone first, the others after its first output
  ec.queue_capacity = 1;   // the engine takes choice 0, then refuses choice 1
  start(ec);
  JsonResponse r = post("/v1/chat/completions", chat_body("__endless__ go", {{"n", 3}}));
  EXPECT_EQ(r.status, 429) << r.raw;
  EXPECT_EQ(r.body["error"]["code"], "queue_full");
  EXPECT_TRUE(eventually([&] { return engine_->active() == 0 && server_->in_flight() == 0; }));
  EXPECT_EQ(engine_->cancelled_finishes().size(), 1u);  // choice 0
  std::vector<json> lines = log_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["http_status"], 429);  // what the client got
  EXPECT_EQ(lines[0]["stop_reason"], "cancelled");
  EXPECT_EQ(lines[0]["choices"].size(), 1u);
  StreamResponse s = post_stream("/v1/chat/completions", chat_body("__endless__ go", {{"n", 2}, {"stream", true}}));
  ASSERT_TRUE(s.done);
  EXPECT_EQ(s.events.back()["error"]["code"], "queue_full");
  EXPECT_TRUE(eventually([&] { return engine_->active() == 0 && server_->in_flight() == 0; }));
}

TEST_F(ServerTest, WithoutPrefixReuseEveryChoiceIsSubmittedAtOnce) {
  start();
  std::thread hold([&] { post("/v1/chat/completions", chat_body("__silent__", {{"n", 3}})); });
  EXPECT_TRUE(eventually([&] { return engine_->submitted().size() == 3u; }));
  server_->stop();
  hold.join();
  EXPECT_EQ(engine_->cancelled_finishes().size(), 3u);
}

}  // namespace
}  // namespace ninfer::server::testing
