#include "engine/constrain/json_grammar.h"

#include <set>
#include <string_view>

#include "engine/core/error.h"

namespace ninfer::constrain {

using ojson = nlohmann::ordered_json;

namespace {

constexpr int32_t kMaxItemsLimit = 64;
constexpr int32_t kMaxLengthLimit = 256;

Expr lit(std::string_view s) { return Expr::literal(s); }
Expr range(uint8_t lo, uint8_t hi) { return Expr::bytes(ByteSet::range(lo, hi)); }
Expr one_of_bytes(std::string_view chars) {
  ByteSet s;
  for (char c : chars) s.add(static_cast<uint8_t>(c), static_cast<uint8_t>(c));
  return Expr::bytes(s);
}
Expr digits(int32_t min, int32_t max) { return Expr::repeat(range('0', '9'), min, max); }

// Up to four whitespace bytes before the value: what a chat model writes after "</think>" or at the start.
Expr leading_space() { return Expr::repeat(one_of_bytes(" \t\n"), 0, 4); }

std::string where(const std::string& ptr) { return ptr.empty() ? "/" : ptr; }

// JSON pointer escaping of one reference token.
std::string pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

const std::set<std::string, std::less<>>& annotations() {
  static const std::set<std::string, std::less<>> a = {"title",   "description", "default",   "examples", "$schema",
                                                       "$id",     "$comment",    "deprecated", "readOnly", "writeOnly",
                                                       "$defs",   "definitions"};
  return a;
}

const std::set<std::string, std::less<>>& supported() {
  static const std::set<std::string, std::less<>> s = {
      "type",     "enum",     "const",     "properties", "required", "additionalProperties", "items", "minItems",
      "maxItems", "minLength", "maxLength", "anyOf",     "oneOf",    "allOf",                "$ref"};
  return s;
}

int32_t bounded(const ojson& s, const char* key, int32_t limit, const std::string& ptr, int32_t fallback) {
  if (!s.contains(key)) return fallback;
  const ojson& v = s[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    fail(ErrorKind::kInvalidArgument, "JSON Schema keyword '{}' at {} must be a non-negative integer", key, where(ptr));
  if (v.get<int64_t>() > limit)
    fail(ErrorKind::kInvalidArgument, "JSON Schema keyword '{}' at {} is {}; structured output supports at most {}", key,
         where(ptr), v.get<int64_t>(), limit);
  return static_cast<int32_t>(v.get<int64_t>());
}

// Whether `v` is an instance of the JSON Schema type (a name or a list of names).
bool has_type(const ojson& v, const ojson& type) {
  if (type.is_array()) {
    for (const ojson& t : type)
      if (has_type(v, t)) return true;
    return false;
  }
  if (!type.is_string()) return false;
  const std::string& t = type.get_ref<const std::string&>();
  if (t == "integer") return v.is_number_integer() || (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>())));
  if (t == "number") return v.is_number();
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  return false;
}

}  // namespace

JsonGrammar::JsonGrammar(Grammar& grammar, const ojson* root_schema) : g_(grammar), root_(root_schema) {}

uint32_t JsonGrammar::basic(const char* name) {
  if (auto it = rules_.find(name); it != rules_.end()) return it->second;
  const uint32_t r = g_.declare(std::string("json_") + name);
  rules_[name] = r;  // before defining: the value rules are mutually recursive
  const std::string_view n = name;
  auto body = [&]() -> Expr {
    if (n == "sp") return Expr::optional(lit(" "));
    if (n == "char") {
      ByteSet ascii;  // printable ASCII and DEL, less '"' and '\'
      ascii.add(0x20, 0x21), ascii.add(0x23, 0x5b), ascii.add(0x5d, 0x7f);
      const Expr cont = range(0x80, 0xbf);
      ByteSet e3;
      e3.add(0xe1, 0xec), e3.add(0xee, 0xef);
      const Expr hex = Expr::bytes([] { ByteSet h; h.add('0', '9'), h.add('a', 'f'), h.add('A', 'F'); return h; }());
      return Expr::choice({
          Expr::bytes(ascii),
          Expr::seq({range(0xc2, 0xdf), cont}),
          Expr::seq({lit("\xe0"), range(0xa0, 0xbf), cont}),
          Expr::seq({Expr::bytes(e3), cont, cont}),
          Expr::seq({lit("\xed"), range(0x80, 0x9f), cont}),
          Expr::seq({lit("\xf0"), range(0x90, 0xbf), cont, cont}),
          Expr::seq({range(0xf1, 0xf3), cont, cont, cont}),
          Expr::seq({lit("\xf4"), range(0x80, 0x8f), cont, cont}),
          Expr::seq({lit("\\"), Expr::choice({one_of_bytes("\"\\/bfnrt"), Expr::seq({lit("u"), hex, hex, hex, hex})})}),
      });
    }
    if (n == "string") return Expr::seq({lit("\""), Expr::star(Expr::rule(basic("char"))), lit("\"")});
    if (n == "integer") return Expr::seq({Expr::optional(lit("-")), Expr::choice({lit("0"), Expr::seq({range('1', '9'), digits(0, 15)})})});
    if (n == "number")
      return Expr::seq({Expr::rule(basic("integer")), Expr::optional(Expr::seq({lit("."), digits(1, 16)})),
                        Expr::optional(Expr::seq({one_of_bytes("eE"), Expr::optional(one_of_bytes("+-")), digits(1, 2)}))});
    if (n == "boolean") return Expr::choice({lit("true"), lit("false")});
    if (n == "value")
      return Expr::choice({Expr::rule(basic("object")), Expr::rule(basic("array")), Expr::rule(basic("string")),
                           Expr::rule(basic("number")), Expr::rule(basic("boolean")), lit("null")});
    if (n == "object") {
      const Expr member = Expr::seq({Expr::rule(basic("string")), lit(":"), Expr::rule(basic("sp")), Expr::rule(basic("value"))});
      return Expr::seq({lit("{"), Expr::optional(Expr::seq({member, Expr::star(Expr::seq({lit(","), Expr::rule(basic("sp")), member}))})),
                        lit("}")});
    }
    if (n == "array") {
      const Expr item = Expr::rule(basic("value"));
      return Expr::seq({lit("["), Expr::optional(Expr::seq({item, Expr::star(Expr::seq({lit(","), Expr::rule(basic("sp")), item}))})),
                        lit("]")});
    }
    fail(ErrorKind::kInternal, "json grammar: no basic rule '{}'", n);
  }();
  g_.define(r, body);
  return r;
}

Expr JsonGrammar::any_value() { return Expr::rule(basic("value")); }
Expr JsonGrammar::string_value() { return Expr::rule(basic("string")); }

Grammar JsonGrammar::any_object() {
  Grammar g;
  JsonGrammar j(g);
  g.set_root(g.add("root", Expr::seq({leading_space(), Expr::rule(j.basic("object"))})));
  g.check_complete();
  return g;
}

Grammar JsonGrammar::from_schema(const ojson& schema) {
  Grammar g;
  const uint32_t root = g.declare("root");
  JsonGrammar j(g, &schema);
  g.define(root, Expr::seq({leading_space(), j.schema(schema, "")}));
  g.set_root(root);
  g.check_complete();
  return g;
}

Expr JsonGrammar::schema(const ojson& s, const std::string& ptr) {
  if (s.is_boolean()) {
    if (s.get<bool>()) return any_value();
    fail(ErrorKind::kInvalidArgument, "the JSON Schema at {} is false: no instance satisfies it", where(ptr));
  }
  if (!s.is_object()) fail(ErrorKind::kInvalidArgument, "the JSON Schema at {} is not an object or a boolean", where(ptr));
  std::vector<std::string> keys;
  for (const auto& [k, v] : s.items()) {
    if (annotations().count(k)) continue;
    if (!supported().count(k))
      fail(ErrorKind::kInvalidArgument, "unsupported JSON Schema keyword '{}' at {}", k, where(ptr));
    keys.push_back(k);
  }
  auto only = [&](const char* keyword, bool with_type = false) {  // keywords that stand alone (with annotations)
    for (const std::string& k : keys)
      if (k != keyword && !(with_type && k == "type"))
        fail(ErrorKind::kInvalidArgument, "JSON Schema keyword '{}' at {} cannot be combined with '{}' here", keyword,
             where(ptr), k);
  };
  // enum / const next to "type": the values of that type (the others are no instances).
  auto typed_values = [&](const ojson& values) {
    std::vector<Expr> options;
    for (const ojson& v : values)
      if (!s.contains("type") || has_type(v, s["type"])) options.push_back(lit(v.dump()));
    if (options.empty())
      fail(ErrorKind::kInvalidArgument, "the JSON Schema at {} allows no value: no enum/const value has its 'type'",
           where(ptr));
    return Expr::choice(std::move(options));
  };
  if (s.contains("$ref")) {
    only("$ref");
    if (!s["$ref"].is_string()) fail(ErrorKind::kInvalidArgument, "'$ref' at {} is not a string", where(ptr));
    return ref(s["$ref"].get<std::string>(), ptr);
  }
  if (s.contains("const")) {
    only("const", true);
    return typed_values(ojson::array({s["const"]}));
  }
  if (s.contains("enum")) {
    only("enum", true);
    const ojson& e = s["enum"];
    if (!e.is_array() || e.empty()) fail(ErrorKind::kInvalidArgument, "'enum' at {} is not a non-empty array", where(ptr));
    return typed_values(e);
  }
  for (const char* combinator : {"anyOf", "oneOf", "allOf"}) {
    if (!s.contains(combinator)) continue;
    only(combinator);
    const ojson& branches = s[combinator];
    if (!branches.is_array() || branches.empty())
      fail(ErrorKind::kInvalidArgument, "'{}' at {} is not a non-empty array", combinator, where(ptr));
    if (std::string_view(combinator) == "allOf") {
      if (branches.size() != 1)
        fail(ErrorKind::kInvalidArgument, "'allOf' at {} has {} branches; structured output supports one", where(ptr),
             branches.size());
      return schema(branches[0], ptr + "/allOf/0");
    }
    std::vector<Expr> options;
    for (size_t i = 0; i < branches.size(); ++i)
      options.push_back(schema(branches[i], fmt::format("{}/{}/{}", ptr, combinator, i)));
    return Expr::choice(std::move(options));
  }
  if (!s.contains("type")) {  // the type the keywords imply, else any value
    if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties")) return typed("object", s, ptr);
    if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) return typed("array", s, ptr);
    if (s.contains("minLength") || s.contains("maxLength")) return typed("string", s, ptr);
    return any_value();
  }
  const ojson& t = s["type"];
  if (t.is_string()) return typed(t.get<std::string>(), s, ptr);
  if (!t.is_array() || t.empty()) fail(ErrorKind::kInvalidArgument, "'type' at {} is not a string or a non-empty array", where(ptr));
  std::vector<Expr> options;
  for (const ojson& one : t) {
    if (!one.is_string()) fail(ErrorKind::kInvalidArgument, "'type' at {} lists a non-string", where(ptr));
    options.push_back(typed(one.get<std::string>(), s, ptr));
  }
  return Expr::choice(std::move(options));
}

Expr JsonGrammar::typed(const std::string& type, const ojson& s, const std::string& ptr) {
  if (type == "object") return object_of(s, ptr);
  if (type == "array") return array_of(s, ptr);
  if (type == "string") return string_of(s, ptr);
  if (type == "number") return Expr::rule(basic("number"));
  if (type == "integer") return Expr::rule(basic("integer"));
  if (type == "boolean") return Expr::rule(basic("boolean"));
  if (type == "null") return lit("null");
  fail(ErrorKind::kInvalidArgument, "JSON Schema 'type' at {} is '{}', not a JSON Schema type", where(ptr), type);
}

Expr JsonGrammar::string_of(const ojson& s, const std::string& ptr) {
  const int32_t min = bounded(s, "minLength", kMaxLengthLimit, ptr, 0);
  const int32_t max = bounded(s, "maxLength", kMaxLengthLimit, ptr, Expr::kUnbounded);
  if (min == 0 && max == Expr::kUnbounded) return string_value();
  if (max != Expr::kUnbounded && max < min)
    fail(ErrorKind::kInvalidArgument, "JSON Schema at {}: maxLength {} is below minLength {}", where(ptr), max, min);
  return Expr::seq({lit("\""), Expr::repeat(Expr::rule(basic("char")), min, max), lit("\"")});
}

Expr JsonGrammar::array_of(const ojson& s, const std::string& ptr) {
  const int32_t min = bounded(s, "minItems", kMaxItemsLimit, ptr, 0);
  const int32_t max = bounded(s, "maxItems", kMaxItemsLimit, ptr, Expr::kUnbounded);
  if (max != Expr::kUnbounded && max < min)
    fail(ErrorKind::kInvalidArgument, "JSON Schema at {}: maxItems {} is below minItems {}", where(ptr), max, min);
  if (max == 0) return lit("[]");
  const Expr item = s.contains("items")
                        ? Expr::rule(g_.add(ptr + "/items", schema(s["items"], ptr + "/items")))
                        : any_value();
  const Expr next = Expr::seq({lit(","), Expr::rule(basic("sp")), item});
  const int32_t more_max = max == Expr::kUnbounded ? Expr::kUnbounded : max - 1;
  if (min == 0) return Expr::seq({lit("["), Expr::optional(Expr::seq({item, Expr::repeat(next, 0, more_max)})), lit("]")});
  return Expr::seq({lit("["), item, Expr::repeat(next, min - 1, more_max), lit("]")});
}

Expr JsonGrammar::object_of(const ojson& s, const std::string& ptr) {
  const ojson empty = ojson::object();
  const ojson& props = s.contains("properties") ? s["properties"] : empty;
  if (!props.is_object()) fail(ErrorKind::kInvalidArgument, "'properties' at {} is not an object", where(ptr));
  std::set<std::string> required;
  if (s.contains("required")) {
    if (!s["required"].is_array()) fail(ErrorKind::kInvalidArgument, "'required' at {} is not an array", where(ptr));
    for (const ojson& r : s["required"]) {
      if (!r.is_string()) fail(ErrorKind::kInvalidArgument, "'required' at {} lists a non-string", where(ptr));
      if (!props.contains(r.get<std::string>()))
        fail(ErrorKind::kInvalidArgument,
             "JSON Schema at {} requires property '{}' that 'properties' does not define (structured output needs its "
             "schema)",
             where(ptr), r.get<std::string>());
      required.insert(r.get<std::string>());
    }
  }
  const Expr sp = Expr::rule(basic("sp"));
  if (props.empty()) {
    const ojson* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
    if (extra && extra->is_boolean() && !extra->get<bool>()) return lit("{}");
    if (!extra || extra->is_boolean()) return Expr::rule(basic("object"));
    const Expr value = Expr::rule(g_.add(ptr + "/additionalProperties", schema(*extra, ptr + "/additionalProperties")));
    const Expr member = Expr::seq({string_value(), lit(":"), sp, value});
    return Expr::seq({lit("{"), Expr::optional(Expr::seq({member, Expr::star(Expr::seq({lit(","), sp, member}))})), lit("}")});
  }
  if (s.contains("additionalProperties") && !s["additionalProperties"].is_boolean())
    schema(s["additionalProperties"], ptr + "/additionalProperties");  // validated; only listed properties are produced
  // Properties in schema order. After(i): properties i.. once one was written (each with its comma);
  // First(i): properties i.. while none was written yet. Optional properties may be skipped.
  std::vector<std::pair<std::string, Expr>> kv;
  for (const auto& [name, sub] : props.items()) {
    const std::string sub_ptr = ptr + "/properties/" + pointer_token(name);
    kv.emplace_back(name, Expr::seq({lit(ojson(name).dump()), lit(":"), sp, schema(sub, sub_ptr)}));
  }
  const size_t n = kv.size();
  std::vector<uint32_t> after(n + 1), first(n + 1);
  for (size_t i = 0; i <= n; ++i) after[i] = g_.declare(fmt::format("{}/after{}", ptr, i));
  for (size_t i = 0; i <= n; ++i) first[i] = g_.declare(fmt::format("{}/first{}", ptr, i));
  g_.define(after[n], Expr::empty());
  g_.define(first[n], Expr::empty());
  for (size_t i = n; i-- > 0;) {
    const bool req = required.count(kv[i].first) > 0;
    const Expr with_comma = Expr::seq({lit(","), sp, kv[i].second, Expr::rule(after[i + 1])});
    g_.define(after[i], req ? with_comma : Expr::choice({with_comma, Expr::rule(after[i + 1])}));
    const Expr lead = Expr::seq({kv[i].second, Expr::rule(after[i + 1])});
    g_.define(first[i], req ? lead : Expr::choice({lead, Expr::rule(first[i + 1])}));
  }
  return Expr::seq({lit("{"), Expr::rule(first[0]), lit("}")});
}

Expr JsonGrammar::ref(const std::string& target, const std::string& ptr) {
  if (auto it = rules_.find("ref:" + target); it != rules_.end()) return Expr::rule(it->second);
  if (!root_) fail(ErrorKind::kInvalidArgument, "'$ref' at {} has no root schema to resolve '{}'", where(ptr), target);
  const ojson* resolved = nullptr;
  std::string path;
  if (target == "#") {
    resolved = root_;
  } else {
    for (std::string_view prefix : {"#/$defs/", "#/definitions/"}) {
      if (!target.starts_with(prefix)) continue;
      const std::string name = target.substr(prefix.size());
      const std::string container(prefix.substr(2, prefix.size() - 3));
      if (root_->contains(container) && (*root_)[container].is_object() && (*root_)[container].contains(name))
        resolved = &(*root_)[container][name], path = "/" + container + "/" + name;
    }
  }
  if (!resolved)
    fail(ErrorKind::kInvalidArgument, "'$ref' at {} points to '{}', which is not '#', '#/$defs/NAME' or "
         "'#/definitions/NAME' of this schema", where(ptr), target);
  const uint32_t r = g_.declare("ref:" + target);
  rules_["ref:" + target] = r;  // before defining: recursive references resolve to the rule
  g_.define(r, schema(*resolved, path));
  return Expr::rule(r);
}

}  // namespace ninfer::constrain
