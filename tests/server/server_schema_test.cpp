// Tests of request parsing/validation and of the response, chunk, usage and error JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/request_report.h"

namespace ninfer::server {
namespace {

using json = nlohmann::json;

json chat_body(json extra = json::object()) {
  json b = {{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  for (auto& [k, v] : extra.items()) b[k] = v;
  return b;
}

// Parsing must fail with a 400 whose param names `param`.
template <typename Fn>
ApiError expect_400(Fn fn, const std::string& param) {
  try {
    fn();
  } catch (const ApiException& e) {
    EXPECT_EQ(e.error().status, 400);
    EXPECT_EQ(e.error().type, "invalid_request_error");
    EXPECT_EQ(e.error().param.value_or("<none>"), param) << e.error().message;
    EXPECT_NE(e.error().message.find(param.substr(0, param.find('['))), std::string::npos) << e.error().message;
    return e.error();
  }
  ADD_FAILURE() << "no error for " << param;
  return {};
}

TEST(ChatRequest, EveryField) {
  json b = chat_body({{"max_tokens", 100},
                      {"max_completion_tokens", 50},
                      {"temperature", 0.5},
                      {"top_p", 0.9},
                      {"top_k", 40},
                      {"min_p", 0.05},
                      {"presence_penalty", 0.1},
                      {"frequency_penalty", -0.2},
                      {"repetition_penalty", 1.1},
                      {"seed", -7},
                      {"stop", json::array({"END", "STOP"})},
                      {"n", 1},
                      {"stream", true},
                      {"stream_options", {{"include_usage", true}}},
                      {"reasoning_effort", "medium"},
                      {"chat_template_kwargs", {{"enable_thinking", false}, {"other", 1}}},
                      {"logprobs", true},
                      {"top_logprobs", 3},
                      {"user", "u1"},
                      {"some_future_field", {{"x", 1}}},
                      {"tools", json::array()},
                      {"tool_choice", "auto"},
                      {"response_format", {{"type", "text"}}},
                      {"logit_bias", {{"12", -100}, {"3", 2.5}}}});
  b["messages"] = json::array(
      {{{"role", "system"}, {"content", "be brief"}},
       {{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "a "}}, {{"type", "text"}, {"text", "b"}}})}},
       {{"role", "assistant"}, {"content", nullptr}, {"reasoning_content", "thought"}},
       {{"role", "assistant"}, {"content", "x"}, {"reasoning", "alias"}, {"name", "bot"}},
       {{"role", "tool"}, {"content", "42"}, {"tool_call_id", "call_1"}}});
  ChatCompletionRequest r = parse_chat_request(b);
  EXPECT_EQ(*r.model, "m");
  ASSERT_EQ(r.messages.size(), 5u);
  EXPECT_EQ(r.messages[1].content, "a b");
  EXPECT_EQ(r.messages[2].reasoning, "thought");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.messages[3].reasoning, "alias");
  EXPECT_EQ(r.messages[3].name, "bot");
  EXPECT_EQ(r.messages[4].tool_call_id, "call_1");
  EXPECT_EQ(*r.max_tokens, 50);  // max_completion_tokens wins
  EXPECT_EQ(r.max_tokens_field, "max_completion_tokens");
  EXPECT_EQ(*r.sampling.temperature, 0.5);
  EXPECT_EQ(*r.sampling.top_k, 40);
  EXPECT_EQ(*r.sampling.seed, static_cast<uint64_t>(int64_t{-7}));
  EXPECT_EQ(r.stop, (std::vector<std::string>{"END", "STOP"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(*r.reasoning_effort, "medium");
  EXPECT_EQ(r.enable_thinking, std::optional<bool>(false));
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_EQ(r.user, "u1");

  SamplingParams defaults;
  defaults.top_k = 20;
  defaults.min_p = 0.5;
  GenerationRequest g = to_generation_request(r, "chatcmpl-1", defaults, {});
  EXPECT_EQ(g.request_id, "chatcmpl-1");
  EXPECT_EQ(g.kind, PromptKind::kChat);
  EXPECT_EQ(g.sampling.top_k, 40);
  EXPECT_EQ(g.sampling.min_p, 0.05);
  EXPECT_FALSE(g.sampling.greedy);
  EXPECT_TRUE(g.sampling.logprobs);
  EXPECT_EQ(g.sampling.top_logprobs, 3);
  const std::vector<std::pair<int32_t, double>> bias{{3, 2.5}, {12, -100.0}};  // by id
  EXPECT_EQ(g.sampling.logit_bias, bias);
  EXPECT_EQ(*g.max_tokens, 50);
  EXPECT_TRUE(g.parse_reasoning);
  EXPECT_EQ(g.enable_thinking, std::optional<bool>(false));
}

TEST(ChatRequest, DefaultsAndPolicy) {
  ChatCompletionRequest r = parse_chat_request(chat_body({{"max_tokens", 7}, {"stop", "x"}}));
  EXPECT_EQ(*r.max_tokens, 7);
  EXPECT_EQ(r.max_tokens_field, "max_tokens");
  EXPECT_EQ(r.stop, (std::vector<std::string>{"x"}));
  EXPECT_FALSE(r.stream);
  SamplingParams defaults;
  defaults.temperature = 0.6;
  GenerationRequest g = to_generation_request(r, "id", defaults, {.force_greedy = true, .reasoning_budget = 100});
  EXPECT_TRUE(g.sampling.greedy);
  EXPECT_EQ(g.sampling.temperature, 0.6);
  EXPECT_EQ(*g.reasoning_budget, 100);

  ChatCompletionRequest t0 = parse_chat_request(chat_body({{"temperature", 0}, {"reasoning_effort", "none"}}));
  GenerationRequest g0 = to_generation_request(t0, "id", {}, {});
  EXPECT_TRUE(g0.sampling.greedy);  // temperature 0 means greedy

  // generation_config do_sample: false makes greedy the default only: a request's temperature samples.
  SamplingParams greedy_default;
  greedy_default.greedy = true;
  EXPECT_TRUE(to_generation_request(parse_chat_request(chat_body({})), "id", greedy_default, {}).sampling.greedy);
  ChatCompletionRequest t8 = parse_chat_request(chat_body({{"temperature", 0.8}}));
  const GenerationRequest g8 = to_generation_request(t8, "id", greedy_default, {});
  EXPECT_FALSE(g8.sampling.greedy);
  EXPECT_EQ(g8.sampling.temperature, 0.8);
  EXPECT_EQ(g0.enable_thinking, std::optional<bool>(false));

  // nulls are absent; model may be left out
  json b = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
            {"temperature", nullptr}, {"stop", nullptr}, {"n", nullptr}};
  ChatCompletionRequest rn = parse_chat_request(b);
  EXPECT_FALSE(rn.model);
  EXPECT_FALSE(rn.sampling.temperature);
}

TEST(ChatRequest, WrongTypesNameTheField) {
  expect_400([] { parse_chat_request(chat_body({{"temperature", "hot"}})); }, "temperature");
  expect_400([] { parse_chat_request(chat_body({{"max_tokens", "10"}})); }, "max_tokens");
  expect_400([] { parse_chat_request(chat_body({{"max_tokens", 1.5}})); }, "max_tokens");
  expect_400([] { parse_chat_request(chat_body({{"max_completion_tokens", true}})); }, "max_completion_tokens");
  expect_400([] { parse_chat_request(chat_body({{"top_p", json::array()}})); }, "top_p");
  expect_400([] { parse_chat_request(chat_body({{"top_k", 2.5}})); }, "top_k");
  expect_400([] { parse_chat_request(chat_body({{"seed", "1"}})); }, "seed");
  expect_400([] { parse_chat_request(chat_body({{"stop", 5}})); }, "stop");
  expect_400([] { parse_chat_request(chat_body({{"stop", json::array({"a", 1})}})); }, "stop[1]");
  expect_400([] { parse_chat_request(chat_body({{"stream", "yes"}})); }, "stream");
  expect_400([] { parse_chat_request(chat_body({{"stream_options", {{"include_usage", 1}}}})); },
             "stream_options.include_usage");
  expect_400([] { parse_chat_request(chat_body({{"chat_template_kwargs", {{"enable_thinking", "no"}}}})); },
             "chat_template_kwargs.enable_thinking");
  expect_400([] { parse_chat_request(chat_body({{"logprobs", 1}})); }, "logprobs");
  expect_400([] { parse_chat_request(chat_body({{"user", 5}})); }, "user");
  expect_400([] { parse_chat_request(chat_body({{"model", 5}})); }, "model");
  expect_400([] { parse_chat_request(chat_body({{"messages", "hi"}})); }, "messages");
  expect_400([] { parse_chat_request(chat_body({{"messages", json::array({5})}})); }, "messages[0]");
  expect_400([] { parse_chat_request(chat_body({{"messages", json::array({{{"role", "user"}, {"content", 5}}})}})); },
             "messages[0].content");
  expect_400([] { parse_chat_request(chat_body({{"messages", json::array({{{"role", 1}, {"content", "x"}}})}})); },
             "messages[0].role");
  ApiError e = expect_400([] { parse_chat_request(chat_body({{"temperature", "hot"}})); }, "temperature");
  EXPECT_EQ(e.code.value_or(""), "invalid_type");
}

TEST(ChatRequest, BadValues) {
  expect_400([] { parse_chat_request(chat_body({{"temperature", 2.5}})); }, "temperature");
  expect_400([] { parse_chat_request(chat_body({{"top_p", 0}})); }, "top_p");
  expect_400([] { parse_chat_request(chat_body({{"min_p", 1.5}})); }, "min_p");
  expect_400([] { parse_chat_request(chat_body({{"presence_penalty", -3}})); }, "presence_penalty");
  expect_400([] { parse_chat_request(chat_body({{"repetition_penalty", 0}})); }, "repetition_penalty");
  expect_400([] { parse_chat_request(chat_body({{"max_tokens", 0}})); }, "max_tokens");
  expect_400([] { parse_chat_request(chat_body({{"stop", ""}})); }, "stop");
  expect_400([] { parse_chat_request(chat_body({{"top_logprobs", 21}, {"logprobs", true}})); }, "top_logprobs");
  expect_400([] { parse_chat_request(chat_body({{"top_logprobs", 2}})); }, "top_logprobs");
  expect_400([] { parse_chat_request(chat_body({{"reasoning_effort", "max"}})); }, "reasoning_effort");
  expect_400([] { parse_chat_request(chat_body({{"messages", json::array()}})); }, "messages");
  expect_400([] { parse_chat_request(json{{"model", "m"}}); }, "messages");
  expect_400([] { parse_chat_request(chat_body({{"messages", json::array({{{"role", "wizard"}, {"content", "x"}}})}})); },
             "messages[0].role");
  expect_400([] { parse_chat_request(chat_body({{"messages", json::array({{{"role", "user"}}})}})); },
             "messages[0].content");
  expect_400(
      [] {
        parse_chat_request(chat_body({{"messages", json::array({{{"role", "user"},
                                                                 {"content", json::array({{{"type", "image_url"}}})}}})}}));
      },
      "messages[0].content[0].type");
  EXPECT_THROW(parse_chat_request(json::array()), ApiException);
}

TEST(ChatRequest, UnsupportedFeaturesAreClear400s) {
  expect_400([] { parse_chat_request(chat_body({{"n", 0}})); }, "n");
  EXPECT_EQ(parse_chat_request(chat_body({{"n", 2}})).n, 2);  // the bound (--max-n) is the HTTP layer's
  expect_400([] { parse_chat_request(chat_body({{"tools", json::array({{{"type", "function"}}})}})); }, "tools[0].function");
  expect_400([] { parse_chat_request(chat_body({{"tool_choice", "required"}})); }, "tool_choice");  // without tools
  expect_400([] { parse_chat_request(chat_body({{"response_format", {{"type", "yaml"}}}})); }, "response_format.type");
  expect_400([] {
    parse_chat_request(chat_body({{"response_format", {{"type", "json_schema"},
                                                       {"json_schema", {{"name", "s"}, {"schema", {{"type", "string"}, {"format", "email"}}}}}}}}));
  }, "response_format.json_schema.schema");
  expect_400([] { parse_chat_request(chat_body({{"response_format", {{"type", "json_schema"}}}})); },
             "response_format.json_schema");
  expect_400([] { parse_chat_request(chat_body({{"logit_bias", {{"-5", 1}}}})); }, "logit_bias.-5");
  expect_400([] { parse_chat_request(chat_body({{"logit_bias", {{"7", -100.5}}}})); }, "logit_bias.7");
  expect_400(
      [] {
        parse_chat_request(chat_body({{"messages", json::array({{{"role", "assistant"},
                                                                 {"tool_calls", json::array({{{"id", "x"}}})}}})}}));
      },
      "messages[0].tool_calls[0].function");
}

TEST(CompletionRequest, PromptForms) {
  CompletionRequest a = parse_completion_request({{"prompt", "once upon"}, {"max_tokens", 5}, {"logprobs", 2}});
  EXPECT_EQ(a.prompt_kind, PromptKind::kText);
  EXPECT_EQ(a.prompt_text, "once upon");
  EXPECT_EQ(*a.logprobs, 2);
  CompletionRequest b = parse_completion_request({{"prompt", json::array({"x y"})}});
  EXPECT_EQ(b.prompt_text, "x y");
  CompletionRequest c = parse_completion_request({{"prompt", json::array({1, 2, 3})}});
  EXPECT_EQ(c.prompt_kind, PromptKind::kTokens);
  EXPECT_EQ(c.prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
  CompletionRequest d = parse_completion_request({{"prompt", json::array({json::array({4, 5})})}});
  EXPECT_EQ(d.prompt_tokens, (std::vector<int32_t>{4, 5}));

  GenerationRequest g = to_generation_request(b, "cmpl-1", {}, {});
  EXPECT_EQ(*g.max_tokens, kDefaultCompletionMaxTokens);
  EXPECT_FALSE(g.parse_reasoning);
  GenerationRequest ga = to_generation_request(a, "cmpl-2", {}, {});
  EXPECT_TRUE(ga.sampling.logprobs);
  EXPECT_EQ(ga.sampling.top_logprobs, 2);

  expect_400([] { parse_completion_request(json::object()); }, "prompt");
  expect_400([] { parse_completion_request({{"prompt", 5}}); }, "prompt");
  expect_400([] { parse_completion_request({{"prompt", json::array({"a", "b"})}}); }, "prompt");
  expect_400([] { parse_completion_request({{"prompt", json::array({1, -2})}}); }, "prompt[1]");
  expect_400([] { parse_completion_request({{"prompt", json::array({1, "x"})}}); }, "prompt[1]");
  expect_400([] { parse_completion_request({{"prompt", "x"}, {"logprobs", 6}}); }, "logprobs");
  expect_400([] { parse_completion_request({{"prompt", "x"}, {"echo", true}}); }, "echo");
  expect_400([] { parse_completion_request({{"prompt", "x"}, {"best_of", 3}}); }, "best_of");
  expect_400([] { parse_completion_request({{"prompt", "x"}, {"suffix", "y"}}); }, "suffix");
  expect_400([] { parse_completion_request({{"prompt", "x"}, {"n", 0}}); }, "n");
  EXPECT_EQ(parse_completion_request({{"prompt", "x"}, {"n", 3}}).n, 3);
}

TEST(ApiErrors, ObjectShapeAndStatuses) {
  json j = bad_request("bad", "temperature", "invalid_value").to_json();
  EXPECT_EQ(j, json::parse(R"({"error":{"message":"bad","type":"invalid_request_error","param":"temperature",
                                "code":"invalid_value"}})"));
  json n = internal_error("x").to_json();
  EXPECT_TRUE(n["error"]["param"].is_null());
  EXPECT_TRUE(n["error"]["code"].is_string());  // a string code, never the HTTP status
  EXPECT_EQ(unauthorized("x").status, 401);
  EXPECT_EQ(unauthorized("x").type, "authentication_error");
  EXPECT_EQ(model_not_found("gpt").status, 404);
  EXPECT_EQ(*model_not_found("gpt").code, "model_not_found");
  EXPECT_EQ(route_not_found("GET", "/x").status, 404);
  EXPECT_EQ(body_too_large(10).status, 413);
  EXPECT_EQ(queue_full("x").status, 429);
  EXPECT_EQ(service_unavailable("x", "model_loading").status, 503);
  EXPECT_EQ(context_length_exceeded("x", "messages").status, 400);
  EXPECT_EQ(*context_length_exceeded("x", "messages").code, "context_length_exceeded");
  EXPECT_EQ(invalid_json("y").status, 400);
}

FinalResult sample_result() {
  FinalResult r;
  r.stop_reason = StopReason::kOutputLimit;
  r.prompt_tokens = 100;
  r.cached_tokens = 20;
  r.completion_tokens = 11;
  r.reasoning_tokens = 4;
  r.timings = {0.5, 2.0, 1.0, 2.6, 3.7};
  return r;
}

TEST(Responses, ChatCompletion) {
  ResponseHead head{"chatcmpl-abc", 1700000000, "qwen"};
  CollectedOutput out;
  out.add({Channel::kReasoning, "think", 2, {}});
  out.add({Channel::kContent, "Hello", 1, {{"Hello", -0.5, {{"Hello", -0.5}, {"Hi", -1.0}}}}});
  out.add({Channel::kContent, " world", 1, {}});
  json j = chat_completion_json(head, out, sample_result(), true);
  EXPECT_EQ(j["id"], "chatcmpl-abc");
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "qwen");
  const json& c = j["choices"][0];
  EXPECT_EQ(c["index"], 0);
  EXPECT_EQ(c["message"]["role"], "assistant");
  EXPECT_EQ(c["message"]["content"], "Hello world");
  EXPECT_EQ(c["message"]["reasoning_content"], "think");
  EXPECT_EQ(c["message"]["reasoning"], "think");
  EXPECT_EQ(c["finish_reason"], "length");
  EXPECT_EQ(c["logprobs"]["content"][0]["token"], "Hello");
  EXPECT_EQ(c["logprobs"]["content"][0]["bytes"], json::array({72, 101, 108, 108, 111}));
  EXPECT_EQ(c["logprobs"]["content"][0]["top_logprobs"][1]["token"], "Hi");
  const json& u = j["usage"];
  EXPECT_EQ(u["prompt_tokens"], 100);
  EXPECT_EQ(u["completion_tokens"], 11);
  EXPECT_EQ(u["total_tokens"], 111);
  EXPECT_EQ(u["prompt_tokens_details"]["cached_tokens"], 20);
  EXPECT_EQ(u["completion_tokens_details"]["reasoning_tokens"], 4);
  const json& t = j["timings"];
  EXPECT_DOUBLE_EQ(t["queue_s"], 0.5);
  EXPECT_DOUBLE_EQ(t["prefill_s"], 2.0);
  EXPECT_DOUBLE_EQ(t["decode_s"], 1.0);
  EXPECT_DOUBLE_EQ(t["ttft_s"], 2.6);
  EXPECT_DOUBLE_EQ(t["total_s"], 3.7);
  EXPECT_DOUBLE_EQ(t["prefill_tok_s"], 40.0);   // (100 - 20) / 2
  EXPECT_DOUBLE_EQ(t["decode_tok_s"], 10.0);    // (11 - 1) / 1
  EXPECT_EQ(t["stop_reason"], "output_limit");
  EXPECT_EQ(t["prompt_n"], 80);
  EXPECT_EQ(t["cache_n"], 20);
  EXPECT_DOUBLE_EQ(t["prompt_ms"], 2000.0);
  EXPECT_DOUBLE_EQ(t["prompt_per_second"], 40.0);
  EXPECT_EQ(t["predicted_n"], 11);
  EXPECT_DOUBLE_EQ(t["predicted_ms"], 1000.0);
  EXPECT_DOUBLE_EQ(t["predicted_per_second"], 11.0);
  EXPECT_FALSE(t.contains("draft_n"));  // only when speculating

  CollectedOutput empty;
  json e = chat_completion_json(head, empty, sample_result(), false);
  EXPECT_EQ(e["choices"][0]["message"]["content"], "");
  EXPECT_TRUE(e["choices"][0]["message"]["reasoning_content"].is_null());
  EXPECT_TRUE(e["choices"][0]["logprobs"].is_null());
}

TEST(Responses, SpecTimings) {
  FinalResult r = sample_result();
  r.spec = SpecStats{"mtp", 3, 4, 12, 9, {4, 3, 2}};
  json t = timings_json(r);
  EXPECT_EQ(t["draft_n"], 12);
  EXPECT_EQ(t["draft_n_accepted"], 9);
  EXPECT_EQ(t["spec"]["method"], "mtp");
  EXPECT_DOUBLE_EQ(t["spec"]["acceptance_rate"], 0.75);
  EXPECT_DOUBLE_EQ(t["spec"]["mean_acceptance_length"], 1.0 + 9.0 / 4.0);
  EXPECT_EQ(t["spec"]["head"], "lm_head");
  r.spec->head = "draft_lm_head";
  EXPECT_EQ(timings_json(r)["spec"]["head"], "draft_lm_head");
}

TEST(Responses, ChatChunks) {
  ResponseHead head{"chatcmpl-x", 5, "m"};
  json role = chat_role_chunk(head, true);
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(role.contains("usage") && role["usage"].is_null());
  EXPECT_FALSE(chat_role_chunk(head, false).contains("usage"));

  auto r = chat_delta_chunks(head, {Channel::kReasoning, "hm", 1, {}}, false, false);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0]["choices"][0]["delta"]["reasoning_content"], "hm");
  EXPECT_EQ(r[0]["choices"][0]["delta"]["reasoning"], "hm");
  EXPECT_FALSE(r[0]["choices"][0]["delta"].contains("content"));
  auto c = chat_delta_chunks(head, {Channel::kContent, "ok", 1, {}}, false, false);
  EXPECT_EQ(c[0]["choices"][0]["delta"]["content"], "ok");
  EXPECT_TRUE(c[0]["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(chat_delta_chunks(head, {Channel::kContent, "", 1, {}}, false, false).empty());

  FinalResult fr = sample_result();
  fr.stop_reason = StopReason::kEos;
  json fin = chat_finish_chunk(head, fr, false, true);
  EXPECT_EQ(fin["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(fin["choices"][0]["delta"].empty());
  EXPECT_TRUE(fin.contains("timings"));
  json u = usage_chunk(head, "chat.completion.chunk", fr);
  EXPECT_TRUE(u["choices"].empty());
  EXPECT_EQ(u["usage"]["total_tokens"], 111);
  EXPECT_TRUE(u.contains("timings"));
}

TEST(Responses, CompletionsAndModels) {
  ResponseHead head{"cmpl-1", 5, "m"};
  CollectedOutput out;
  out.add({Channel::kContent, "ab", 1, {{"ab", -0.1, {{"ab", -0.1}, {"c", -2}}}}});
  out.add({Channel::kContent, "c", 1, {{"c", -0.2, {}}}});
  FinalResult fr = sample_result();
  fr.stop_reason = StopReason::kStopString;
  json j = completion_json(head, out, fr, true);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "abc");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["choices"][0]["logprobs"]["tokens"], json::array({"ab", "c"}));
  EXPECT_EQ(j["choices"][0]["logprobs"]["text_offset"], json::array({0, 2}));
  EXPECT_DOUBLE_EQ(j["choices"][0]["logprobs"]["top_logprobs"][0]["c"], -2.0);

  auto chunks = completion_delta_chunks(head, {Channel::kContent, "z", 1, {{"z", -1, {}}}}, true, false, 7);
  EXPECT_EQ(chunks[0]["choices"][0]["text"], "z");
  EXPECT_EQ(chunks[0]["choices"][0]["logprobs"]["text_offset"][0], 7);

  json models = models_json("m", 123, 4096);
  EXPECT_EQ(models["object"], "list");
  EXPECT_EQ(models["data"][0]["id"], "m");
  EXPECT_EQ(models["data"][0]["object"], "model");
  EXPECT_EQ(models["data"][0]["max_model_len"], 4096);
}

TEST(Responses, FinishReasonMapping) {
  EXPECT_EQ(finish_reason_name(StopReason::kEos), "stop");
  EXPECT_EQ(finish_reason_name(StopReason::kStopString), "stop");
  EXPECT_EQ(finish_reason_name(StopReason::kOutputLimit), "length");
  EXPECT_EQ(finish_reason_name(StopReason::kContextLimit), "length");
  EXPECT_EQ(finish_reason_name(StopReason::kReasoningBudget), "length");
  EXPECT_EQ(finish_reason_name(StopReason::kCancelled), "abort");
  EXPECT_EQ(finish_reason_name(StopReason::kError), "error");
  EXPECT_EQ(stop_reason_name(StopReason::kReasoningBudget), "reasoning_budget");
  EXPECT_EQ(stop_reason_name(StopReason::kContextLimit), "context_limit");
}

}  // namespace
}  // namespace ninfer::server
