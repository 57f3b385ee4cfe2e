// Owns the recorded model outputs with tool calls (and what they must parse to), shared by the parser tests and
// the fake engine (prompt word __tool:NAME__).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/engine_port.h"

namespace ninfer::server::testing {

struct ExpectedCall {
  std::string name;
  std::string arguments;  // the exact OpenAI arguments string
};

struct ToolCallRecording {
  std::string name;
  ToolCallFormat format;
  std::string text;                 // the content channel as the model wrote it
  std::string content;              // what stays content
  std::vector<ExpectedCall> calls;  // in order
};

// The tools the recordings call (an OpenAI `tools` array): their schemas type the XML parameter values.
inline const char* const kRecordedTools = R"([
 {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                 "required": ["city"]}}},
 {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}},
 {"type": "function", "function": {"name": "configure", "parameters": {"type": "object", "properties": {
  "options": {"type": "object"}, "tags": {"type": "array", "items": {"type": "string"}},
  "verbose": {"type": "boolean"}, "ratio": {"type": "number"}, "code": {"type": "string"},
  "count": {"type": "integer"}, "limit": {"type": ["integer", "null"]}}}}}
])";

inline const std::vector<ToolCallRecording>& tool_call_recordings() {
  static const std::vector<ToolCallRecording> r = {
      {"xml_single", ToolCallFormat::kXml,
       "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n"
       "</parameter>\n</function>\n</tool_call>",
       "",
       {{"get_weather", R"({"city":"Paris","days":3})"}}},
      {"xml_two", ToolCallFormat::kXml,
       "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n"
       "<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
       "",
       {{"get_weather", R"({"city":"Paris"})"}, {"get_time", "{}"}}},
      {"xml_text_before", ToolCallFormat::kXml,
       "Let me check the weather for you.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nLyon\n"
       "</parameter>\n</function>\n</tool_call>",
       "Let me check the weather for you.",
       {{"get_weather", R"({"city":"Lyon"})"}}},
      {"xml_unicode", ToolCallFormat::kXml,
       "<tool_call>\n<function=get_weather>\n<parameter=city>\n東京 — naïve 🌸 \"quoted\" \\ back\n</parameter>\n"
       "</function>\n</tool_call>",
       "",
       {{"get_weather", "{\"city\":\"東京 — naïve 🌸 \\\"quoted\\\" \\\\ back\"}"}}},
      {"xml_typed", ToolCallFormat::kXml,
       "<tool_call>\n<function=configure>\n<parameter=options>\n{\"a\": [1, 2, {\"b\": null}], \"c\": \"x\"}\n"
       "</parameter>\n<parameter=tags>\n[\"x\", \"y\"]\n</parameter>\n<parameter=verbose>\nTrue\n</parameter>\n"
       "<parameter=ratio>\n2.5\n</parameter>\n<parameter=code>\n42\n</parameter>\n<parameter=count>\nmany\n"
       "</parameter>\n<parameter=limit>\nnull\n</parameter>\n<parameter=extra>\n7\n</parameter>\n</function>\n"
       "</tool_call>",
       "",
       {{"configure", R"({"options":{"a":[1,2,{"b":null}],"c":"x"},"tags":["x","y"],"verbose":true,"ratio":2.5,)"
                      R"("code":"42","count":"many","limit":null,"extra":"7"})"}}},
      {"xml_multiline_value", ToolCallFormat::kXml,
       "<tool_call>\n<function=configure>\n<parameter=code>\ndef f():\n    return 1\n\n</parameter>\n</function>\n"
       "</tool_call>",
       "",
       {{"configure", R"({"code":"def f():\n    return 1\n"})"}}},
      {"xml_missing_parameter_close", ToolCallFormat::kXml,
       "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=days>\n2\n</function>\n</tool_call>",
       "",
       {{"get_weather", R"({"city":"Paris","days":2})"}}},
      {"xml_no_close_tag_at_end", ToolCallFormat::kXml,
       "Checking.\n<tool_call>\n<function=get_time>\n</function>\n",
       "Checking.",
       {{"get_time", "{}"}}},
      {"xml_text_after", ToolCallFormat::kXml,
       "<tool_call>\n<function=get_time>\n</function>\n</tool_call>\n\nI asked for the time.  ",
       "I asked for the time.  ",
       {{"get_time", "{}"}}},
      {"xml_text_around", ToolCallFormat::kXml,
       "Let me look.\n<tool_call>\n<function=get_time>\n</function>\n</tool_call>\nDone, see above.\n",
       "Let me look.\nDone, see above.\n",
       {{"get_time", "{}"}}},
      {"xml_malformed", ToolCallFormat::kXml,
       "Sure.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</tool_call>",
       "Sure.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</tool_call>",
       {}},
      {"xml_unfinished", ToolCallFormat::kXml,
       "Sure.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nPar",
       "Sure.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nPar",
       {}},
      {"xml_malformed_then_good", ToolCallFormat::kXml,
       "<tool_call>oops</tool_call> <tool_call>\n<function=get_time>\n</function>\n</tool_call>",
       "<tool_call>oops</tool_call>",
       {{"get_time", "{}"}}},
      {"text_with_angles", ToolCallFormat::kXml,
       "a < b, <tool> and <tool_cal are text; so is <tool_call",
       "a < b, <tool> and <tool_cal are text; so is <tool_call",
       {}},
      {"hermes_single", ToolCallFormat::kHermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>",
       "",
       {{"get_weather", R"({"city":"Paris","days":3})"}}},
      {"hermes_two_with_text", ToolCallFormat::kHermes,
       "I will call two tools.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n"
       "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
       "I will call two tools.",
       {{"get_weather", R"({"city":"Zürich"})"}, {"get_time", "{}"}}},
      {"hermes_nested", ToolCallFormat::kHermes,
       "<tool_call>\n{\"name\": \"configure\", \"arguments\": {\"options\": {\"z\": 1, \"a\": [true, null]}, "
       "\"code\": \"</tool\"}}\n</tool_call>",
       "",
       {{"configure", R"({"options":{"z":1,"a":[true,null]},"code":"</tool"})"}}},
      {"hermes_string_arguments", ToolCallFormat::kHermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Oslo\\\"}\"}\n</tool_call>",
       "",
       {{"get_weather", R"({"city":"Oslo"})"}}},
      {"hermes_malformed", ToolCallFormat::kHermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par\n</tool_call>",
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par\n</tool_call>",
       {}},
  };
  return r;
}

inline const ToolCallRecording* find_tool_call_recording(std::string_view name) {
  for (const auto& r : tool_call_recordings())
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace ninfer::server::testing
