// Forced tool-call grammars: the Qwen3.5 XML calls the chat template writes, hermes JSON calls, argument typing by
// schema, required parameters, named and parallel calls.
#include <gtest/gtest.h>

#include "engine/constrain/grammar_matcher.h"
#include "engine/constrain/tool_call_grammar.h"
#include "engine/core/error.h"

namespace ninfer::constrain {
namespace {

using ojson = nlohmann::ordered_json;

const ojson& tools() {
  static const ojson t = ojson::parse(R"([
    {"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{
      "city":{"type":"string"},"days":{"type":"integer"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},
      "verbose":{"type":"boolean"},"where":{"type":"object","properties":{"lat":{"type":"number"}},"required":["lat"]}},
      "required":["city"]}}},
    {"type":"function","function":{"name":"now","parameters":{"type":"object","properties":{}}}}])");
  return t;
}

ToolCallGrammarOptions options(ToolCallSyntax syntax, std::string only = "", bool parallel = true) {
  return {.syntax = syntax, .only = std::move(only), .parallel = parallel};
}

bool xml(std::string_view text, ToolCallGrammarOptions o = {}) {
  return GrammarMatcher(tool_call_grammar(tools(), o)).matches(text);
}

TEST(ToolCallGrammar, XmlCallsAsTheTemplateWritesThem) {
  EXPECT_TRUE(xml("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_TRUE(xml("\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nSaint-Denis, \"FR\" <b>\nline 2\n</parameter>\n"
                  "<parameter=days>\n3\n</parameter>\n<parameter=unit>\ncelsius\n</parameter>\n<parameter=verbose>\nTrue\n"
                  "</parameter>\n<parameter=where>\n{\"lat\": 48.9}\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_TRUE(xml("<tool_call>\n<function=now>\n</function>\n</tool_call>"));
}

TEST(ToolCallGrammar, XmlArgumentsFollowTheSchema) {
  EXPECT_FALSE(xml("<tool_call>\n<function=get_weather>\n</function>\n</tool_call>")) << "city is required";
  EXPECT_FALSE(xml("<tool_call>\n<function=get_weather>\n<parameter=city>\nP\n</parameter>\n<parameter=days>\nthree\n"
                   "</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(xml("<tool_call>\n<function=get_weather>\n<parameter=city>\nP\n</parameter>\n<parameter=unit>\nkelvin\n"
                   "</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(xml("<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n<parameter=city>\nP\n"
                   "</parameter>\n</function>\n</tool_call>")) << "schema order";
  EXPECT_FALSE(xml("<tool_call>\n<function=get_weather>\n<parameter=city>\na</parameter>b\n</parameter>\n</function>\n"
                   "</tool_call>")) << "a string value cannot hold </parameter>";
  EXPECT_FALSE(xml("<tool_call>\n<function=get_weather>\n<parameter=city>\nP\n</parameter>\n<parameter=where>\n{}\n"
                   "</parameter>\n</function>\n</tool_call>")) << "where.lat is required";
  EXPECT_FALSE(xml("<tool_call>\n<function=other>\n</function>\n</tool_call>"));
  EXPECT_FALSE(xml("Sure! <tool_call>\n<function=now>\n</function>\n</tool_call>")) << "a forced call comes first";
  EXPECT_FALSE(xml("<tool_call>\n<function=now>\n</function>\n</tool_call> done")) << "nothing after the calls";
}

TEST(ToolCallGrammar, ParallelAndNamedCalls) {
  const std::string two = "<tool_call>\n<function=now>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n"
                          "<parameter=city>\nP\n</parameter>\n</function>\n</tool_call>";
  EXPECT_TRUE(xml(two));
  EXPECT_FALSE(xml(two, options(ToolCallSyntax::kXml, "", false)));
  EXPECT_FALSE(xml("<tool_call>\n<function=now>\n</function>\n</tool_call>", options(ToolCallSyntax::kXml, "get_weather")));
  EXPECT_TRUE(xml("<tool_call>\n<function=now>\n</function>\n</tool_call>", options(ToolCallSyntax::kXml, "now")));
  try {
    tool_call_grammar(tools(), options(ToolCallSyntax::kXml, "missing"));
    FAIL() << "an unknown named function must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
}

TEST(ToolCallGrammar, HermesCalls) {
  const ToolCallGrammarOptions h = options(ToolCallSyntax::kHermes);
  EXPECT_TRUE(xml("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>", h));
  EXPECT_TRUE(xml("<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>", h));
  EXPECT_FALSE(xml("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\": 2}}\n</tool_call>", h));
  EXPECT_FALSE(xml("<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>", options(ToolCallSyntax::kHermes, "get_weather")));
}

TEST(ToolCallGrammar, RefusedSchemasNameTheTool) {
  const ojson bad = ojson::parse(R"([{"type":"function","function":{"name":"f","parameters":{"type":"object",
    "properties":{"x":{"type":"string","pattern":"^a"}}}}}])");
  try {
    tool_call_grammar(bad, options(ToolCallSyntax::kHermes));
    FAIL() << "pattern is not supported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tool 'f'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("pattern"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ninfer::constrain
