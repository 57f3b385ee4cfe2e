// Owns parsing tool calls out of generated content text (Qwen3-Coder XML and hermes JSON), streaming or at once.
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/engine_port.h"

namespace ninfer::server {

// One parsed call, in OpenAI form: `arguments` is a compact JSON object text (UTF-8 kept as is).
struct ToolCall {
  std::string id;         // "call_…", the same in the stream and in the final message
  std::string name;
  std::string arguments;
};

// A streaming event. The first event of a call has start = true, its id and name, and empty arguments; later
// events of the call carry argument fragments. The fragments of one call concatenate to its final arguments.
struct ToolCallEvent {
  size_t index = 0;       // the call's position among the returned calls
  bool start = false;
  std::string id;         // start only
  std::string name;       // start only
  std::string arguments;  // fragment (empty on start)
  size_t content_offset = 0;  // bytes of the same ToolCallDelta's content that the text puts before this event
};

struct ToolCallDelta {
  std::string content;    // text for the content channel
  std::vector<ToolCallEvent> events;
  bool empty() const { return content.empty() && events.empty(); }
};

struct ToolCallParserOptions {
  ToolCallFormat format = ToolCallFormat::kXml;
  // The request's tools ([{type, function:{name, parameters}}]): XML parameter values are typed by the schemas.
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  size_t max_calls = std::numeric_limits<size_t>::max();  // parallel_tool_calls false: 1 (later calls dropped)
  std::function<std::string()> new_id;                      // unset: new_tool_call_id()
};

// Incremental parser for the content channel (after the reasoning parser). Rules, the same whatever the chunking
// (feed()… + finish() gives what parse() of the whole text gives):
//  - A block <tool_call>…</tool_call> whose inside is one well-formed call becomes a call. Whitespace right before
//    it is dropped, and so is whitespace right after it unless content text comes both before and after the call
//    (then it separates them). At the end of generation a block without </tool_call> still counts when its
//    inside is complete (XML: up to </function>; hermes: a whole JSON object).
//  - A malformed block, or an unfinished one at the end, stays content as written (vLLM does the same).
//  - Everything else is content. Text that could still become "<tool_call>", whitespace that could precede one,
//    and an open block are held back, so partial markup never reaches the content.
//  - XML parameter values: one newline after <parameter=P> and one before </parameter> are dropped; the value is
//    typed by the tool's JSON schema: a property whose type is integer / number / boolean / object / array / null
//    (or a list of them) is parsed as JSON when valid (True/False/None accepted), else kept as a string; a
//    string-typed property, one without a type, or an unknown parameter stays a string. A missing </parameter>
//    ends at the next <parameter= or </function> (Qwen3-Coder sometimes omits it).
//  - hermes: {"name": …, "arguments": {…}} ("parameters" accepted too; arguments given as a JSON string that holds
//    an object are accepted).
class ToolCallParser {
 public:
  explicit ToolCallParser(ToolCallParserOptions options);

  ToolCallDelta feed(std::string_view text);
  ToolCallDelta finish();  // end of generation: held text is decided

  // The calls returned so far (after finish(): all of them).
  const std::vector<ToolCall>& calls() const { return calls_; }

  struct Result {
    std::string content;
    std::vector<ToolCall> calls;
  };
  static Result parse(std::string_view text, ToolCallParserOptions options);

 private:
  void run(ToolCallDelta& out, bool final);
  void take_text(ToolCallDelta& out, std::string_view text);  // text outside calls: emits it, holds trailing space
  void emit_held_space(ToolCallDelta& out);
  void take_block(ToolCallDelta& out, std::string_view inner, std::string_view raw);  // a call, or raw content

  ToolCallParserOptions opt_;
  std::string buf_;           // undecided text; starts with <tool_call> while in_call_
  std::string space_;         // whitespace held back: dropped when a call follows
  bool in_call_ = false;
  size_t close_scan_ = 0;     // while in_call_: </tool_call> cannot start before this offset of buf_
  bool after_call_ = false;   // the last thing decided was a call (the held whitespace follows it)
  bool emitted_ = false;      // some content was emitted
  std::vector<ToolCall> calls_;
};

// The parser options for a request, or nullopt when its output is not parsed for calls: no tools, tool_choice
// "none", or a model whose format is kNone.
std::optional<ToolCallParserOptions> tool_call_parser_options(const GenerationRequest& request, ToolCallFormat format);

// "call_" + 24 random alphanumerics.
std::string new_tool_call_id();

// The format a chat template's text implies: kXml when it writes <function=…> / <parameter=…>, kHermes when it
// writes <tool_call> around JSON, else kNone.
ToolCallFormat tool_call_format_of_template(std::string_view template_text);
// --tool-call-parser: "auto" resolves through the template's text; xml | hermes | none are taken as given.
// Throws std::invalid_argument for another name.
ToolCallFormat resolve_tool_call_format(std::string_view flag, std::string_view template_text);

}  // namespace ninfer::server
