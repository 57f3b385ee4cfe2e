#include "server/tool_call_parser.h"

#include <optional>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

namespace ninfer::server {

namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kFunction = "<function=";
constexpr std::string_view kFunctionEnd = "</function>";
constexpr std::string_view kParameter = "<parameter=";
constexpr std::string_view kParameterEnd = "</parameter>";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool all_space(std::string_view s) { return trim(s).empty(); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// The longest proper prefix of `tag` that `s` ends with (text that may still become the tag).
size_t partial_suffix(std::string_view s, std::string_view tag) {
  for (size_t k = std::min(s.size(), tag.size() - 1); k > 0; --k)
    if (s.substr(s.size() - k) == tag.substr(0, k)) return k;
  return 0;
}

std::string dump(const ojson& v) { return v.dump(-1, ' ', false, ojson::error_handler_t::replace); }

struct ParsedCall {
  std::string name;
  ojson arguments = ojson::object();
};

// The JSON-schema types of one parameter of one tool; empty when unknown or untyped.
std::vector<std::string> schema_types(const ojson& tools, const std::string& function, const std::string& param) {
  std::vector<std::string> types;
  if (!tools.is_array()) return types;
  for (const ojson& tool : tools) {
    if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object()) continue;
    const ojson& f = tool["function"];
    if (!f.contains("name") || f["name"] != function) continue;
    if (!f.contains("parameters") || !f["parameters"].is_object()) return types;
    const ojson& params = f["parameters"];
    if (!params.contains("properties") || !params["properties"].is_object()) return types;
    const ojson& props = params["properties"];
    if (!props.contains(param) || !props[param].is_object() || !props[param].contains("type")) return types;
    const ojson& t = props[param]["type"];
    if (t.is_string()) types.push_back(t.get<std::string>());
    if (t.is_array())
      for (const ojson& e : t)
        if (e.is_string()) types.push_back(e.get<std::string>());
    return types;
  }
  return types;
}

bool fits(const ojson& v, const std::string& type) {
  if (type == "integer" || type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "null") return v.is_null();
  return false;
}

// An XML parameter's text as the JSON value its schema asks for (see the header for the rule).
ojson typed_value(const std::string& text, const std::vector<std::string>& types) {
  bool non_string = false;
  for (const auto& t : types) non_string = non_string || t != "string";
  if (!non_string) return text;
  const std::string_view v = trim(text);
  std::optional<ojson> parsed;
  const std::string word = lower(v);
  if (word == "true" || word == "false") parsed = word == "true";
  else if (word == "none" || word == "null") parsed = nullptr;
  else {
    try {
      parsed = ojson::parse(v);
    } catch (const ojson::exception&) {
    }
  }
  if (parsed)
    for (const auto& t : types)
      if (fits(*parsed, t)) return *parsed;
  return text;
}

std::optional<ParsedCall> parse_xml(std::string_view inner, const ojson& tools) {
  std::string_view s = trim(inner);
  if (!s.starts_with(kFunction)) return std::nullopt;
  const size_t name_end = s.find('>', kFunction.size());
  if (name_end == std::string_view::npos) return std::nullopt;
  ParsedCall call;
  const std::string_view name = trim(s.substr(kFunction.size(), name_end - kFunction.size()));
  if (name.empty() || name.find_first_of("<\n") != std::string_view::npos) return std::nullopt;
  call.name = std::string(name);
  std::string_view rest = s.substr(name_end + 1);
  const size_t fend = rest.find(kFunctionEnd);
  if (fend == std::string_view::npos || !all_space(rest.substr(fend + kFunctionEnd.size()))) return std::nullopt;
  const std::string_view body = rest.substr(0, fend);
  size_t pos = 0;
  while (true) {
    while (pos < body.size() && is_space(body[pos])) ++pos;
    if (pos == body.size()) break;
    if (body.substr(pos, kParameter.size()) != kParameter) return std::nullopt;
    const size_t pname_end = body.find('>', pos + kParameter.size());
    if (pname_end == std::string_view::npos) return std::nullopt;
    const std::string_view pname = trim(body.substr(pos + kParameter.size(), pname_end - pos - kParameter.size()));
    if (pname.empty() || pname.find_first_of("<\n") != std::string_view::npos) return std::nullopt;
    const size_t vstart = pname_end + 1;
    const size_t close = body.find(kParameterEnd, vstart);
    const size_t next = body.find(kParameter, vstart);
    std::string_view value;
    if (close != std::string_view::npos && (next == std::string_view::npos || close < next)) {
      value = body.substr(vstart, close - vstart);
      pos = close + kParameterEnd.size();
    } else if (next != std::string_view::npos) {
      value = body.substr(vstart, next - vstart);
      pos = next;
    } else {
      value = body.substr(vstart);
      pos = body.size();
    }
    if (value.starts_with('\n')) value.remove_prefix(1);
    if (value.ends_with('\n')) value.remove_suffix(1);
    const std::string key(pname);
    call.arguments[key] = typed_value(std::string(value), schema_types(tools, call.name, key));
  }
  return call;
}

std::optional<ParsedCall> parse_hermes(std::string_view inner) {
  ojson j;
  try {
    j = ojson::parse(trim(inner));
  } catch (const ojson::exception&) {
    return std::nullopt;
  }
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty())
    return std::nullopt;
  ParsedCall call;
  call.name = j["name"].get<std::string>();
  const char* key = j.contains("arguments") ? "arguments" : "parameters";
  if (!j.contains(key) || j[key].is_null()) return call;
  ojson args = j[key];
  if (args.is_string()) {
    try {
      args = ojson::parse(args.get<std::string>());
    } catch (const ojson::exception&) {
      return std::nullopt;
    }
  }
  if (!args.is_object()) return std::nullopt;
  call.arguments = std::move(args);
  return call;
}

}  // namespace

ToolCallParser::ToolCallParser(ToolCallParserOptions options) : opt_(std::move(options)) {
  if (!opt_.new_id) opt_.new_id = new_tool_call_id;
}

ToolCallDelta ToolCallParser::feed(std::string_view text) {
  ToolCallDelta out;
  buf_.append(text);
  run(out, false);
  return out;
}

ToolCallDelta ToolCallParser::finish() {
  ToolCallDelta out;
  run(out, true);
  return out;
}

ToolCallParser::Result ToolCallParser::parse(std::string_view text, ToolCallParserOptions options) {
  ToolCallParser p(std::move(options));
  Result r;
  r.content = p.feed(text).content;
  r.content += p.finish().content;
  r.calls = p.calls();
  return r;
}

void ToolCallParser::run(ToolCallDelta& out, bool final) {
  while (true) {
    if (!in_call_) {
      const size_t p = buf_.find(kOpen);
      if (p != std::string::npos) {
        take_text(out, std::string_view(buf_).substr(0, p));
        buf_.erase(0, p);
        in_call_ = true;
        continue;
      }
      const size_t hold = final ? 0 : partial_suffix(buf_, kOpen);
      take_text(out, std::string_view(buf_).substr(0, buf_.size() - hold));
      buf_.erase(0, buf_.size() - hold);
      if (final) {  // no call follows the held whitespace: it ends the content, unless a call came last
        if (!after_call_) out.content += space_;
        space_.clear();
      }
      return;
    }
    const size_t e = buf_.find(kClose, close_scan_);
    if (e == std::string::npos) {
      // A long call arrives a token at a time: the next search starts where this one could not match.
      close_scan_ = buf_.size() >= kClose.size() ? buf_.size() - kClose.size() + 1 : 0;
      if (!final) return;
      const std::string raw = std::move(buf_);
      buf_.clear();
      in_call_ = false;
      close_scan_ = 0;
      take_block(out, std::string_view(raw).substr(kOpen.size()), raw);
      continue;
    }
    const std::string raw = buf_.substr(0, e + kClose.size());
    buf_.erase(0, raw.size());
    in_call_ = false;
    close_scan_ = 0;
    take_block(out, std::string_view(raw).substr(kOpen.size(), e - kOpen.size()), raw);
  }
}

void ToolCallParser::take_text(ToolCallDelta& out, std::string_view text) {
  size_t last = text.size();
  while (last > 0 && is_space(text[last - 1])) --last;
  if (last == 0) {
    space_.append(text);
    return;
  }
  size_t first = 0;
  while (first < last && is_space(text[first])) ++first;
  space_.append(text.substr(0, first));
  emit_held_space(out);
  out.content.append(text.substr(first, last - first));
  space_.assign(text.substr(last));
  emitted_ = true;
}

void ToolCallParser::emit_held_space(ToolCallDelta& out) {
  // Whitespace after a call is kept only between content text on both sides of it.
  if (!after_call_ || emitted_) out.content += space_;
  space_.clear();
  after_call_ = false;
}

void ToolCallParser::take_block(ToolCallDelta& out, std::string_view inner, std::string_view raw) {
  // Without </tool_call> (end of generation) the inside must still be a whole call: both inner parsers demand
  // their closing (</function>, the JSON object's brace), so the same parse decides both cases.
  std::optional<ParsedCall> call =
      opt_.format == ToolCallFormat::kHermes ? parse_hermes(inner) : parse_xml(inner, opt_.tools);
  if (!call) {
    emit_held_space(out);
    out.content.append(raw);
    emitted_ = true;
    return;
  }
  space_.clear();
  after_call_ = true;
  if (calls_.size() >= opt_.max_calls) return;
  const size_t index = calls_.size();
  ToolCall c{opt_.new_id(), call->name, dump(call->arguments)};
  const size_t at = out.content.size();
  out.events.push_back({index, true, c.id, c.name, "", at});
  // Fragments per argument: "{"k":v", ",\"k2\":v2", …, "}" concatenate to dump(arguments).
  std::string frag = "{";
  bool first = true;
  for (const auto& [key, value] : call->arguments.items()) {
    if (!first) frag += ",";
    frag += dump(ojson(key)) + ":" + dump(value);
    out.events.push_back({index, false, "", "", std::move(frag), at});
    frag.clear();
    first = false;
  }
  frag += "}";
  out.events.push_back({index, false, "", "", std::move(frag), at});
  calls_.push_back(std::move(c));
}

std::optional<ToolCallParserOptions> tool_call_parser_options(const GenerationRequest& request, ToolCallFormat format) {
  if (format == ToolCallFormat::kNone || request.tools.empty() || request.tool_choice.mode == ToolChoiceMode::kNone)
    return std::nullopt;
  ToolCallParserOptions o;
  o.format = format;
  o.tools = request.tools;
  if (!request.parallel_tool_calls) o.max_calls = 1;
  return o;
}

std::string new_tool_call_id() {
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlnum[rng() % (sizeof(kAlnum) - 1)];
  return id;
}

ToolCallFormat tool_call_format_of_template(std::string_view text) {
  if (text.empty()) return ToolCallFormat::kXml;  // no template in the artifact: the built-in Qwen3.5 renderer
  if (text.find("<function=") != std::string_view::npos || text.find("<parameter=") != std::string_view::npos)
    return ToolCallFormat::kXml;
  if (text.find("<tool_call>") != std::string_view::npos) return ToolCallFormat::kHermes;
  return ToolCallFormat::kNone;
}

ToolCallFormat resolve_tool_call_format(std::string_view flag, std::string_view template_text) {
  if (flag == "auto") return tool_call_format_of_template(template_text);
  if (flag == "xml") return ToolCallFormat::kXml;
  if (flag == "hermes") return ToolCallFormat::kHermes;
  if (flag == "none") return ToolCallFormat::kNone;
  throw std::invalid_argument(fmt::format("--tool-call-parser '{}' is not one of auto, xml, hermes, none", flag));
}

}  // namespace ninfer::server
