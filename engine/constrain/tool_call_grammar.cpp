#include "engine/constrain/tool_call_grammar.h"

#include <set>

#include <fmt/format.h>

#include "engine/constrain/json_grammar.h"
#include "engine/core/error.h"

namespace ninfer::constrain {

using ojson = nlohmann::ordered_json;

namespace {

// Any bytes that do not contain `pattern`: a KMP automaton, one rule per matched pattern prefix.
Expr text_without(Grammar& g, std::string_view pattern, const std::string& name) {
  const size_t m = pattern.size();
  std::vector<size_t> fail_to(m, 0);  // KMP failure function
  for (size_t i = 1, k = 0; i < m; ++i) {
    while (k > 0 && pattern[i] != pattern[k]) k = fail_to[k - 1];
    if (pattern[i] == pattern[k]) ++k;
    fail_to[i] = k;
  }
  auto step = [&](size_t state, uint8_t b) {
    while (state > 0 && static_cast<uint8_t>(pattern[state]) != b) state = fail_to[state - 1];
    return static_cast<uint8_t>(pattern[state]) == b ? state + 1 : state;
  };
  std::vector<uint32_t> rules(m);
  for (size_t i = 0; i < m; ++i) rules[i] = g.declare(fmt::format("{}_{}", name, i));
  for (size_t i = 0; i < m; ++i) {
    std::vector<ByteSet> to(m);  // bytes by the state they lead to; reaching m (the whole pattern) is not allowed
    for (unsigned b = 0; b < 256; ++b) {
      const size_t j = step(i, static_cast<uint8_t>(b));
      if (j < m) to[j].add(static_cast<uint8_t>(b), static_cast<uint8_t>(b));
    }
    std::vector<Expr> options;
    for (size_t j = 0; j < m; ++j)
      if (to[j] != ByteSet{}) options.push_back(Expr::seq({Expr::bytes(to[j]), Expr::rule(rules[j])}));
    options.push_back(Expr::empty());
    g.define(rules[i], Expr::choice(std::move(options)));
  }
  return Expr::rule(rules[0]);
}

bool only_strings(const ojson& values) {
  for (const ojson& v : values)
    if (!v.is_string()) return false;
  return true;
}

bool allows_boolean(const ojson& s) {
  if (!s.is_object() || !s.contains("type")) return false;
  const ojson& t = s["type"];
  if (t.is_string()) return t == "boolean";
  if (t.is_array())
    for (const ojson& one : t)
      if (one == "boolean") return true;
  return false;
}

// One XML parameter value: raw text for strings, the raw enum strings, else JSON (booleans also as Python prints them).
Expr xml_value(Grammar& g, JsonGrammar& json, const ojson& s, const std::string& ptr, const std::string& rule_name) {
  if (s.is_object()) {
    const ojson* values = s.contains("enum") ? &s["enum"] : nullptr;
    ojson single;
    if (s.contains("const")) single = ojson::array({s["const"]}), values = &single;
    if (values && values->is_array() && !values->empty() && only_strings(*values)) {
      std::vector<Expr> options;
      for (const ojson& v : *values) options.push_back(Expr::literal(v.get<std::string>()));
      return Expr::choice(std::move(options));
    }
    if (!values && s.contains("type") && s["type"] == "string") return text_without(g, "</parameter>", rule_name);
  }
  Expr value = json.schema(s, ptr);
  if (allows_boolean(s)) value = Expr::choice({value, Expr::literal("True"), Expr::literal("False")});
  return value;
}

const ojson& function_of(const ojson& tool, size_t i) {
  if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object() ||
      !tool["function"].contains("name") || !tool["function"]["name"].is_string())
    fail(ErrorKind::kInvalidArgument, "tools[{}] is not a function tool with a name", i);
  return tool["function"];
}

Expr call(Grammar& g, const ojson& fn, size_t index, ToolCallSyntax syntax) {
  const std::string name = fn["name"].get<std::string>();
  const ojson params = fn.contains("parameters") && fn["parameters"].is_object() ? fn["parameters"]
                                                                                  : ojson::object({{"type", "object"}});
  const std::string ptr = fmt::format("tools[{}].function.parameters", index);
  JsonGrammar json(g, &params);
  try {
    if (syntax == ToolCallSyntax::kHermes) {
      const uint32_t args = g.add(ptr, json.schema(params, ""));
      return Expr::seq({Expr::literal("<tool_call>\n{\"name\": " + ojson(name).dump() + ", \"arguments\": "),
                        Expr::rule(args), Expr::literal("}\n</tool_call>")});
    }
    std::vector<Expr> items{Expr::literal("<tool_call>\n<function=" + name + ">\n")};
    const ojson none = ojson::object();
    const ojson& props = params.contains("properties") && params["properties"].is_object() ? params["properties"] : none;
    std::set<std::string> required;
    if (params.contains("required") && params["required"].is_array())
      for (const ojson& r : params["required"])
        if (r.is_string()) required.insert(r.get<std::string>());
    for (const auto& [p, sub] : props.items()) {
      const std::string sub_ptr = "/properties/" + p;
      const Expr value = xml_value(g, json, sub, sub_ptr, fmt::format("{}{}", ptr, sub_ptr));
      const uint32_t param = g.add(fmt::format("{}{}#xml", ptr, sub_ptr),
                                   Expr::seq({Expr::literal("<parameter=" + p + ">\n"), value, Expr::literal("\n</parameter>\n")}));
      items.push_back(required.count(p) ? Expr::rule(param) : Expr::optional(Expr::rule(param)));
    }
    items.push_back(Expr::literal("</function>\n</tool_call>"));
    return Expr::seq(std::move(items));
  } catch (const Error& e) {
    fail(ErrorKind::kInvalidArgument, "tool '{}' ({}): {}", name, ptr, e.what());
  }
}

}  // namespace

Grammar tool_call_grammar(const ojson& tools, const ToolCallGrammarOptions& options) {
  if (!tools.is_array() || tools.empty()) fail(ErrorKind::kInvalidArgument, "a forced tool call needs tools");
  Grammar g;
  const uint32_t root = g.declare("root");
  std::vector<Expr> calls;
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& fn = function_of(tools[i], i);
    if (!options.only.empty() && fn["name"] != options.only) continue;
    calls.push_back(Expr::rule(g.add(fmt::format("call_{}", fn["name"].get<std::string>()), call(g, fn, i, options.syntax))));
  }
  if (calls.empty()) fail(ErrorKind::kInvalidArgument, "tool_choice names '{}', which is not one of the tools", options.only);
  const uint32_t one = g.add("call", Expr::choice(std::move(calls)));
  const Expr lead = Expr::repeat(Expr::literal("\n"), 0, 2);
  const Expr body = options.parallel ? Expr::seq({Expr::rule(one), Expr::star(Expr::seq({Expr::literal("\n"), Expr::rule(one)}))})
                                     : Expr::rule(one);
  g.define(root, Expr::seq({lead, body}));
  g.set_root(root);
  g.check_complete();
  return g;
}

}  // namespace ninfer::constrain
