// Tool calling over raw HTTP (issue 20): recorded outputs through the fake engine, non-streaming and streaming,
// tools / tool_choice / parallel_tool_calls / history validation, and the charset of JSON and SSE answers.
#include <gtest/gtest.h>

#include "tests/server/raw_http.h"
#include "tests/server/server_fixture.h"
#include "tests/server/tool_call_recordings.h"

namespace ninfer::server::testing {
namespace {

json tools_json() { return json::parse(kRecordedTools); }

class ToolsTest : public ServerTest {
 public:
  json body(const std::string& recording, json extra = json::object()) const {
    json b = chat_body("__tool:" + recording + "__ please", {{"tools", tools_json()}});
    for (auto& [k, v] : extra.items()) b[k] = v;
    return b;
  }
  void check_recording(const ToolCallRecording& r);
};

// The stream accumulated as OpenAI documents it: content concatenated, tool_calls by index (id, type and name from
// the first delta of an index, arguments concatenated).
struct Accumulated {
  std::string content;
  json calls = json::array();
  std::string finish_reason;
};

Accumulated accumulate(const StreamResponse& s) {
  Accumulated a;
  for (const json& e : s.events) {
    if (!e.contains("choices") || e["choices"].empty()) continue;
    const json& c = e["choices"][0];
    if (c["finish_reason"].is_string()) a.finish_reason = c["finish_reason"];
    const json& d = c["delta"];
    if (d.contains("content") && d["content"].is_string()) a.content += d["content"].get<std::string>();
    if (!d.contains("tool_calls")) continue;
    EXPECT_FALSE(d.contains("content")) << e.dump();  // a tool-call chunk carries only the call
    for (const json& tc : d["tool_calls"]) {
      const size_t i = tc["index"].get<size_t>();
      if (i == a.calls.size()) {
        EXPECT_TRUE(tc.contains("id") && tc["id"].get<std::string>().rfind("call_", 0) == 0) << e.dump();
        EXPECT_EQ(tc["type"], "function") << e.dump();
        EXPECT_EQ(tc["function"]["arguments"], "") << e.dump();
        a.calls.push_back({{"id", tc["id"]}, {"name", tc["function"]["name"]}, {"arguments", ""}});
      } else {
        EXPECT_LT(i, a.calls.size()) << e.dump();
        EXPECT_FALSE(tc.contains("id")) << e.dump();  // the name and id come once
        EXPECT_FALSE(tc["function"].contains("name")) << e.dump();
        a.calls[i]["arguments"] = a.calls[i]["arguments"].get<std::string>() + tc["function"]["arguments"].get<std::string>();
      }
    }
  }
  return a;
}

void ToolsTest::check_recording(const ToolCallRecording& r) {
  SCOPED_TRACE(r.name);
  JsonResponse res = post("/v1/chat/completions", body(r.name));
  ASSERT_EQ(res.status, 200) << res.raw;
  const json& choice = res.body["choices"][0];
  const json& m = choice["message"];
  if (r.calls.empty()) {
    EXPECT_EQ(m["content"], r.content);
    EXPECT_FALSE(m.contains("tool_calls"));
  } else {
    if (r.content.empty()) {
      EXPECT_TRUE(m["content"].is_null()) << res.raw;
    } else {
      EXPECT_EQ(m["content"], r.content);
    }
    ASSERT_EQ(m["tool_calls"].size(), r.calls.size()) << res.raw;
    for (size_t i = 0; i < r.calls.size(); ++i) {
      const json& c = m["tool_calls"][i];
      EXPECT_EQ(c["id"].get<std::string>().rfind("call_", 0), 0u);
      EXPECT_EQ(c["type"], "function");
      EXPECT_EQ(c["function"]["name"], r.calls[i].name);
      EXPECT_EQ(c["function"]["arguments"], r.calls[i].arguments);
    }
  }
  EXPECT_EQ(choice["finish_reason"], r.calls.empty() ? "stop" : "tool_calls");
  EXPECT_TRUE(m["reasoning_content"].is_string()) << res.raw;  // the fake thinks first: reasoning is kept

  StreamResponse s = post_stream("/v1/chat/completions", body(r.name, {{"stream", true}}));
  ASSERT_EQ(s.status, 200);
  ASSERT_TRUE(s.done);
  Accumulated a = accumulate(s);
  EXPECT_EQ(a.content, r.content);
  ASSERT_EQ(a.calls.size(), r.calls.size()) << s.raw;
  for (size_t i = 0; i < r.calls.size(); ++i) {
    EXPECT_EQ(a.calls[i]["name"], r.calls[i].name);
    EXPECT_EQ(a.calls[i]["arguments"], r.calls[i].arguments);
  }
  EXPECT_EQ(a.finish_reason, r.calls.empty() ? "stop" : "tool_calls");
  EXPECT_FALSE(s.reasoning().empty());
  if (r.content.find('<') == std::string::npos) {
    EXPECT_EQ(a.content.find('<'), std::string::npos) << s.raw;
  }
}

TEST_F(ToolsTest, XmlRecordingsNonStreamingAndStreaming) {
  start();
  for (const auto& r : tool_call_recordings())
    if (r.format == ToolCallFormat::kXml) check_recording(r);
}

TEST_F(ToolsTest, HermesRecordingsNonStreamingAndStreaming) {
  FakeEngine::Config ec;
  ec.tool_call_format = ToolCallFormat::kHermes;
  start(ec);
  for (const auto& r : tool_call_recordings())
    if (r.format == ToolCallFormat::kHermes) check_recording(r);
}

TEST_F(ToolsTest, ParallelToolCallsFalseKeepsTheFirst) {
  start();
  JsonResponse res = post("/v1/chat/completions", body("xml_two", {{"parallel_tool_calls", false}}));
  ASSERT_EQ(res.status, 200) << res.raw;
  ASSERT_EQ(res.body["choices"][0]["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(res.body["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  Accumulated a = accumulate(post_stream("/v1/chat/completions", body("xml_two", {{"parallel_tool_calls", false},
                                                                                   {"stream", true}})));
  EXPECT_EQ(a.calls.size(), 1u);
}

TEST_F(ToolsTest, WithoutToolsOrWithChoiceNoneTheMarkupIsContent) {
  start();
  const ToolCallRecording& r = *find_tool_call_recording("xml_single");
  for (json extra : {json{{"tool_choice", "none"}}, json{{"tools", json::array()}}}) {
    JsonResponse res = post("/v1/chat/completions", body("xml_single", extra));
    ASSERT_EQ(res.status, 200) << res.raw;
    EXPECT_EQ(res.body["choices"][0]["message"]["content"], r.text);
    EXPECT_FALSE(res.body["choices"][0]["message"].contains("tool_calls"));
    EXPECT_EQ(res.body["choices"][0]["finish_reason"], "stop");
  }
  // With "none" the tools still reach the template.
  EXPECT_EQ(engine_->submitted().front().tools.size(), tools_json().size());
  EXPECT_EQ(engine_->submitted().front().tool_choice.mode, ToolChoiceMode::kNone);
}

TEST_F(ToolsTest, ParserNoneLeavesTheMarkup) {
  FakeEngine::Config ec;
  ec.tool_call_format = ToolCallFormat::kNone;
  start(ec);
  JsonResponse res = post("/v1/chat/completions", body("xml_single"));
  ASSERT_EQ(res.status, 200) << res.raw;
  EXPECT_EQ(res.body["choices"][0]["message"]["content"], find_tool_call_recording("xml_single")->text);
}

TEST_F(ToolsTest, OutputLimitInsideACallGivesTheRawTextAndLength) {
  start();
  JsonResponse res = post("/v1/chat/completions", body("xml_single", {{"max_tokens", 12}}));
  ASSERT_EQ(res.status, 200) << res.raw;
  const json& choice = res.body["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_FALSE(choice["message"].contains("tool_calls"));
  const std::string content = choice["message"]["content"];
  EXPECT_EQ(find_tool_call_recording("xml_single")->text.rfind(content, 0), 0u) << content;  // a prefix
  StreamResponse s = post_stream("/v1/chat/completions", body("xml_single", {{"max_tokens", 12}, {"stream", true}}));
  Accumulated a = accumulate(s);
  EXPECT_EQ(a.content, content);
  EXPECT_EQ(a.finish_reason, "length");
}

TEST_F(ToolsTest, HistoryWithToolCallsReachesTheEngineInOrder) {
  start();
  json tools = json::parse(R"([{"type":"function","function":{"name":"f","parameters":{"type":"object",
      "properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}}}}])");
  // Sent as text so that the key order (zeta before alpha) is the client's, not nlohmann::json's sorted one.
  const std::string raw = R"({"model":"fake-model","tools":[{"type":"function","function":{"name":"f",
      "parameters":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}}}}],
      "messages":[{"role":"user","content":"call f"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
        "function":{"name":"f","arguments":"{\"zeta\":\"z\",\"alpha\":1}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"42"}]})";
  JsonResponse res = post("/v1/chat/completions", raw);
  ASSERT_EQ(res.status, 200) << res.raw;
  const GenerationRequest g = engine_->submitted().back();
  ASSERT_EQ(g.messages.size(), 3u);
  ASSERT_EQ(g.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(g.messages[1].tool_calls[0]["function"]["arguments"], "{\"zeta\":\"z\",\"alpha\":1}");
  EXPECT_EQ(g.messages[2].tool_call_id, "call_1");
  EXPECT_EQ(g.tool_choice.mode, ToolChoiceMode::kAuto);
  const auto& props = g.tools[0]["function"]["parameters"]["properties"];
  EXPECT_EQ(props.begin().key(), "zeta");  // the client's key order is kept for the template
}

struct BadCase {
  const char* what;
  json extra;
  const char* code;
  const char* param;
};

TEST_F(ToolsTest, BadToolFieldsAre400sNamingTheParam) {
  start();
  const json tool = tools_json()[0];
  json no_name = tool;
  no_name["function"].erase("name");
  json bad_params = tool;
  bad_params["function"]["parameters"] = "x";
  json custom = tool;
  custom["type"] = "custom";
  const std::vector<BadCase> cases = {
      {"tools not a list", {{"tools", "x"}}, "invalid_type", "tools"},
      {"tool without name", {{"tools", json::array({no_name})}}, "missing_required_parameter", "tools[0].function.name"},
      {"tool name with spaces", {{"tools", json::parse(R"([{"type":"function","function":{"name":"a b"}}])")}},
       "invalid_value", "tools[0].function.name"},
      {"duplicate names", {{"tools", json::array({tool, tool})}}, "invalid_value", "tools[1].function.name"},
      {"parameters not an object", {{"tools", json::array({bad_params})}}, "invalid_type", "tools[0].function.parameters"},
      {"custom tool", {{"tools", json::array({custom})}}, "unsupported_parameter", "tools[0].type"},
      {"strict not a boolean", {{"tools", json::parse(R"([{"type":"function","function":{"name":"f","strict":1}}])")}},
       "invalid_type", "tools[0].function.strict"},
      {"unknown named tool", {{"tools", tools_json()}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}},
       "invalid_value", "tool_choice.function.name"},
      {"required without tools", {{"tool_choice", "required"}}, "invalid_value", "tool_choice"},
      {"parallel_tool_calls not a boolean", {{"tools", tools_json()}, {"parallel_tool_calls", "no"}}, "invalid_type",
       "parallel_tool_calls"},
      {"history arguments not JSON",
       {{"messages", json::parse(R"([{"role":"user","content":"x"},{"role":"assistant","tool_calls":[
           {"id":"call_1","type":"function","function":{"name":"f","arguments":"{not json"}}]}])")}},
       "invalid_value", "messages[1].tool_calls[0].function.arguments"},
      {"history call without name",
       {{"messages", json::parse(R"([{"role":"user","content":"x"},{"role":"assistant","tool_calls":[
           {"id":"call_1","type":"function","function":{"arguments":"{}"}}]}])")}},
       "missing_required_parameter", "messages[1].tool_calls[0].function.name"},
  };
  for (const BadCase& c : cases) {
    JsonResponse res = post("/v1/chat/completions", chat_body("hi", c.extra));
    EXPECT_EQ(res.status, 400) << c.what << ": " << res.raw;
    EXPECT_EQ(res.body["error"]["code"], c.code) << c.what << ": " << res.raw;
    EXPECT_EQ(res.body["error"]["param"], c.param) << c.what << ": " << res.raw;
  }
}

// Forced calls are decoded under a grammar of the model's call markup (the real engine: tests/serve and
// tests/constrain); the HTTP layer passes them on, and refuses them only when no tool-call format is known.
TEST_F(ToolsTest, RequiredAndNamedToolChoiceNeedAToolCallFormat) {
  start();
  for (json choice : {json("required"), json{{"type", "function"}, {"function", {{"name", "get_time"}}}}}) {
    JsonResponse res = post("/v1/chat/completions", body("xml_single", {{"tool_choice", choice}}));
    EXPECT_EQ(res.status, 200) << res.raw;
  }
  EXPECT_EQ(engine_->submitted().back().tool_choice.mode, ToolChoiceMode::kNamed);
  EXPECT_EQ(engine_->submitted().back().tool_choice.name, "get_time");
  TearDown();
  FakeEngine::Config none;
  none.tool_call_format = ToolCallFormat::kNone;
  start(none);
  JsonResponse res = post("/v1/chat/completions", body("xml_single", {{"tool_choice", "required"}}));
  EXPECT_EQ(res.status, 400) << res.raw;
  EXPECT_EQ(res.body["error"]["code"], "unsupported_parameter") << res.raw;
  EXPECT_EQ(res.body["error"]["param"], "tool_choice") << res.raw;
  // strict is accepted.
  json strict = tools_json();
  strict[0]["function"]["strict"] = true;
  EXPECT_EQ(post("/v1/chat/completions", body("xml_single", {{"tools", strict}})).status, 200);
}

TEST_F(ToolsTest, JsonAndSseDeclareUtf8) {
  start();
  JsonResponse res = post("/v1/chat/completions", chat_body("héllo"));
  ASSERT_EQ(res.status, 200);
  EXPECT_EQ(res.headers.find("Content-Type")->second, "application/json; charset=utf-8");
  StreamResponse s = post_stream("/v1/chat/completions", chat_body("héllo", {{"stream", true}}));
  ASSERT_EQ(s.status, 200);
  EXPECT_EQ(s.headers.find("Content-Type")->second, "text/event-stream; charset=utf-8");
  // Raw bytes, as a client without an HTTP library sees them.
  RawResponse raw = raw_exchange(port_, "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(raw.header("Content-Type"), "application/json; charset=utf-8") << raw.head;
  raw = raw_exchange(port_, raw_post("/v1/chat/completions", chat_body("x", {{"stream", true}}).dump(),
                                     "Connection: close\r\n"));
  EXPECT_EQ(raw.header("Content-Type"), "text/event-stream; charset=utf-8") << raw.head;
}

}  // namespace
}  // namespace ninfer::server::testing
