#include "server/structured_output.h"

#include <functional>

#include <spdlog/spdlog.h>

#include "engine/constrain/json_grammar.h"
#include "engine/constrain/tool_call_grammar.h"
#include "engine/constrain/triggered_constraint.h"
#include "engine/core/error.h"
#include "server/api_error.h"

namespace ninfer::server {

using ojson = nlohmann::ordered_json;

namespace {

[[noreturn]] void refuse(std::string message, std::string param, std::string code = "invalid_value") {
  throw ApiException(bad_request(std::move(message), std::move(param), std::move(code)));
}

std::string type_name(const ojson& v) { return v.type_name(); }

// Whether any function tool says "strict": true (its calls must follow its parameters' schema).
bool any_strict(const ojson& tools) {
  for (const ojson& t : tools)
    if (t.contains("function") && t["function"].value("strict", false)) return true;
  return false;
}

}  // namespace

ResponseFormat parse_response_format(const ojson& value) {
  ResponseFormat out;
  if (!value.is_object())
    refuse(fmt::format("'response_format' must be an object, not {}.", type_name(value)), "response_format", "invalid_type");
  if (!value.contains("type") || value["type"].is_null())
    refuse("'response_format.type' is required: 'text', 'json_object' or 'json_schema'.", "response_format.type",
           "missing_required_parameter");
  if (!value["type"].is_string())
    refuse("'response_format.type' must be a string: 'text', 'json_object' or 'json_schema'.", "response_format.type",
           "invalid_type");
  const std::string type = value["type"].get<std::string>();
  if (type == "text") return out;
  if (type == "json_object") {
    out.kind = ResponseFormat::Kind::kJsonObject;
    return out;
  }
  if (type != "json_schema")
    refuse(fmt::format("response_format.type '{}' is not one of 'text', 'json_object', 'json_schema'.", type),
           "response_format.type");
  out.kind = ResponseFormat::Kind::kJsonSchema;
  if (!value.contains("json_schema") || !value["json_schema"].is_object())
    refuse("response_format.json_schema must be an object (type 'json_schema' needs one).", "response_format.json_schema",
           value.contains("json_schema") ? "invalid_type" : "missing_required_parameter");
  const ojson& js = value["json_schema"];
  if (js.contains("name") && !js["name"].is_null()) {
    if (!js["name"].is_string())
      refuse("'response_format.json_schema.name' must be a string.", "response_format.json_schema.name", "invalid_type");
    out.name = js["name"].get<std::string>();
  }
  if (js.contains("strict") && !js["strict"].is_null()) {
    if (!js["strict"].is_boolean())
      refuse("'response_format.json_schema.strict' must be a boolean.", "response_format.json_schema.strict",
             "invalid_type");
    out.strict = js["strict"].get<bool>();
  }
  if (!js.contains("schema") || !(js["schema"].is_object() || js["schema"].is_boolean()))
    refuse("'response_format.json_schema.schema' must be a JSON Schema object.", "response_format.json_schema.schema");
  out.schema = js["schema"];
  try {
    constrain::JsonGrammar::from_schema(out.schema);  // refuse now what cannot be constrained, naming the keyword
  } catch (const Error& e) {
    refuse(fmt::format("response_format.json_schema.schema: {}.", e.what()), "response_format.json_schema.schema");
  }
  return out;
}

StructuredOutput::StructuredOutput(const Tokenizer& tokenizer, std::vector<int32_t> end_ids)
    : tokenizer_(tokenizer), end_ids_(std::move(end_ids)), think_end_(tokenizer.token_id("</think>")) {}

std::shared_ptr<constrain::CompiledGrammar> StructuredOutput::compiled(const std::string& key,
                                                                       const std::function<constrain::Grammar()>& make) {
  std::shared_ptr<constrain::CompiledGrammar> dropped;  // destroyed after the lock is released
  std::lock_guard lock(mu_);
  for (auto it = grammars_.begin(); it != grammars_.end(); ++it)
    if (it->first == key) {
      grammars_.splice(grammars_.begin(), grammars_, it);
      return grammars_.front().second;
    }
  if (!vocab_) {
    vocab_ = constrain::TokenVocabulary::from_tokenizer(tokenizer_);
    spdlog::info("structured output: {} tokens sorted for grammar masks", vocab_->sorted().size());
  }
  auto g = std::make_shared<constrain::CompiledGrammar>(make(), vocab_);
  // Its token masks are walked ahead by the shared workers (what an answer reaches first, first); requests use it at
  // once.
  g->precompute_async(key.size() > 80 ? key.substr(0, 77) + "..." : key);
  grammars_.emplace_front(key, g);
  if (grammars_.size() > kMaxGrammars) {
    dropped = std::move(grammars_.back().second);
    grammars_.pop_back();
  }
  return g;
}

std::shared_ptr<LogitConstraint> StructuredOutput::constraint(const GenerationRequest& r, ToolCallFormat format,
                                                              bool opened_reasoning) {
  const bool forced_call = r.tool_choice.mode == ToolChoiceMode::kRequired || r.tool_choice.mode == ToolChoiceMode::kNamed;
  // tool_choice "auto" with strict tools: the model decides whether to call; a call it opens follows the schemas.
  const bool strict_auto = r.tool_choice.mode == ToolChoiceMode::kAuto && any_strict(r.tools);
  const bool json = r.response_format.kind != ResponseFormat::Kind::kText;
  if (!forced_call && !strict_auto && !json) return nullptr;
  if ((forced_call || strict_auto) && json)
    refuse(fmt::format("{} and a JSON response_format cannot be combined: the answer is either a call or the JSON.",
                       forced_call ? "A forced tool call (tool_choice 'required' or a named function)"
                                   : "Strict tools with tool_choice 'auto'"),
           "response_format");
  std::optional<int32_t> trigger;
  if (strict_auto) {
    trigger = tokenizer_.token_id("<tool_call>");
    if (format == ToolCallFormat::kNone || !trigger)
      refuse("'strict' tools with tool_choice 'auto' need the model's <tool_call> token and a tool-call format, and "
             "this server has none (--tool-call-parser none, or a tokenizer without <tool_call>); drop 'strict' or "
             "use tool_choice 'required'.", "tools");
  }
  std::shared_ptr<constrain::CompiledGrammar> grammar;
  if (forced_call || strict_auto) {
    if (format == ToolCallFormat::kNone)
      refuse("tool_choice 'required' or a named function needs a tool-call format, and this server parses none "
             "(--tool-call-parser none, or the model's chat template writes no tool calls).", "tool_choice");
    constrain::ToolCallGrammarOptions o{.syntax = format == ToolCallFormat::kHermes ? constrain::ToolCallSyntax::kHermes
                                                                                    : constrain::ToolCallSyntax::kXml,
                                        .only = r.tool_choice.mode == ToolChoiceMode::kNamed ? r.tool_choice.name : "",
                                        .parallel = r.parallel_tool_calls};
    const std::string key = fmt::format("tools/{}/{}/{}/{}", tool_call_format_name(format), o.only, o.parallel, r.tools.dump());
    try {
      grammar = compiled(key, [&] { return constrain::tool_call_grammar(r.tools, o); });
    } catch (const Error& e) {
      refuse(fmt::format("the tools cannot be forced: {}.", e.what()), "tools");
    }
  } else if (r.response_format.kind == ResponseFormat::Kind::kJsonObject) {
    grammar = compiled("json_object", [] { return constrain::JsonGrammar::any_object(); });
  } else {
    try {
      grammar = compiled("schema/" + r.response_format.schema.dump(),
                         [&] { return constrain::JsonGrammar::from_schema(r.response_format.schema); });
    } catch (const Error& e) {
      refuse(fmt::format("response_format.json_schema.schema: {}.", e.what()), "response_format.json_schema.schema");
    }
  }
  const std::optional<int32_t> start_after = opened_reasoning && think_end_ ? think_end_ : std::nullopt;
  if (strict_auto)
    return std::make_shared<constrain::TriggeredConstraint>(
        std::move(grammar), constrain::TriggeredConstraintOptions{*trigger, end_ids_, start_after});
  return std::make_shared<constrain::GrammarConstraint>(
      std::move(grammar), constrain::GrammarConstraintOptions{.end_ids = end_ids_, .start_after = start_after});
}

}  // namespace ninfer::server
