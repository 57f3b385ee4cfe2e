// Owns the grammars of forced tool calls (tool_choice "required" or a named function): the model's own call markup,
// Qwen3.5 / Qwen3-Coder XML or hermes JSON, with each function's arguments typed by its JSON Schema.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "engine/constrain/grammar.h"

namespace ninfer::constrain {

enum class ToolCallSyntax {
  // <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n…</function>\n</tool_call>; VALUE is JSON for
  // object/array/number/integer/boolean/null parameters (booleans also True/False, as the template prints them),
  // free text without "</parameter>" for strings.
  kXml,
  // <tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>; ARGS the parameters' JSON.
  kHermes,
};

struct ToolCallGrammarOptions {
  ToolCallSyntax syntax = ToolCallSyntax::kXml;
  std::string only;       // the one function allowed (tool_choice named); empty = any of `tools`
  bool parallel = true;   // more than one call, each on its own line
};

// The output: up to two newlines, then one call (or several with `parallel`), then nothing. `tools` is the OpenAI
// tools array ([{type:"function", function:{name, parameters}}]). Parameters appear in schema order, required ones
// always, optional ones optionally. Throws Error(kInvalidArgument) naming the tool for a schema structured output
// refuses, or when `only` is not one of the tools.
Grammar tool_call_grammar(const nlohmann::ordered_json& tools, const ToolCallGrammarOptions& options);

}  // namespace ninfer::constrain
