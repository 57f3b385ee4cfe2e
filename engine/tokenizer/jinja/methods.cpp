// Owns attribute and item access of chat-template values: str/dict/list methods, indexing, slicing, iteration.
#include <algorithm>
#include <cctype>

#include "engine/tokenizer/jinja/builtins.h"
#include "engine/tokenizer/jinja/py_ops.h"
#include "engine/tokenizer/py_json.h"

namespace ninfer::jinja {
namespace {


Value bound(const Value& self, const std::string& name) {
  return Value::function(name, [self, name](Interpreter&, CallArgs& a) -> Value {
    if (self.is_string()) {
      const std::string& s = self.s.str();
      auto prefixes = [&](const Value* p) {
        std::vector<std::string> out;
        if (p && p->is_string()) out.push_back(p->s.str());
        else if (p && p->is_array())
          for (const auto& x : *p->arr) out.push_back(x.to_str());
        else throw TemplateError(name + " arg must be str or a tuple of str");
        return out;
      };
      if (name == "startswith" || name == "endswith") {
        for (const auto& p : prefixes(a.get(0, "prefix")))
          if (name == "startswith" ? s.starts_with(p) : s.ends_with(p)) return Value::boolean(true);
        return Value::boolean(false);
      }
      if (name == "strip" || name == "lstrip" || name == "rstrip")
        return stripped(self, a.get(0, "chars"), name != "rstrip", name != "lstrip");
      if (name == "upper") return derived(upper_case(s), self);
      if (name == "lower") return derived(lower_case(s), self);
      if (name == "title") return derived(title_case(s), self);
      if (name == "capitalize") return derived(capitalize(s), self);
      if (name == "split" || name == "rsplit") {
        const Value* sep = a.get(0, "sep");
        int64_t maxsplit = int_arg(a, 1, "maxsplit", -1);
        Ranges parts;
        if (!sep || sep->is_none()) {
          if (name == "rsplit" && maxsplit >= 0) throw TemplateError("rsplit() without a separator is not supported");
          parts = split_ws(s, maxsplit);
        } else {
          parts = split_sep(s, sep->to_str(), maxsplit, name == "rsplit");
        }
        Array out;
        for (auto& [pos, len] : parts) out.push_back(sub(self, pos, len));
        return Value::array(std::move(out));
      }
      if (name == "replace") {
        Value r = derived(replace_all(s, str_arg(a, 0, "old", "old"), str_arg(a, 1, "new", "new"), int_arg(a, 2, "count", -1)), self);
        if (const Value* nw = a.get(1, "new"); nw && nw->s.any_plain()) r.s = Text(r.s.str(), true);
        return r;
      }
      if (name == "find" || name == "rfind" || name == "index" || name == "count") {
        std::string sub = str_arg(a, 0, "sub", "substring");
        if (name == "count") {
          if (sub.empty()) return Value::integer(cp_count(s) + 1);
          int64_t n = 0;
          for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
          return Value::integer(n);
        }
        size_t p = name == "rfind" ? s.rfind(sub) : s.find(sub);
        if (p == std::string::npos) {
          if (name == "index") throw TemplateError("substring not found");
          return Value::integer(-1);
        }
        return Value::integer(cp_count(s.substr(0, p)));
      }
      if (name == "splitlines") {
        Array out;
        size_t b = 0;
        for (size_t i = 0; i < s.size(); ++i)
          if (s[i] == '\n' || s[i] == '\r') {
            out.push_back(derived(s.substr(b, i - b), self));
            if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
            b = i + 1;
          }
        if (b < s.size()) out.push_back(derived(s.substr(b), self));
        return Value::array(std::move(out));
      }
      if (name == "join") {
        Text t;
        bool first = true;
        for (const auto& x : iterate(*a.get(0, "iterable"))) {
          if (!first) t.append(self.s);
          first = false;
          t.append(x.to_text());
        }
        return Value::text(std::move(t));
      }
      auto all = [&](auto pred) {
        if (s.empty()) return Value::boolean(false);
        for (char c : s)
          if (!pred(static_cast<unsigned char>(c))) return Value::boolean(false);
        return Value::boolean(true);
      };
      if (name == "isdigit") return all([](unsigned char c) { return c >= '0' && c <= '9'; });
      if (name == "isalpha") return all([](unsigned char c) { return std::isalpha(c) != 0; });
      if (name == "isalnum") return all([](unsigned char c) { return std::isalnum(c) != 0; });
      if (name == "isspace") return Value::boolean(!s.empty() && py::strip(s).empty());
      if (name == "islower") return Value::boolean(lower_case(s) == s && upper_case(s) != s);
      if (name == "isupper") return Value::boolean(upper_case(s) == s && lower_case(s) != s);
      if (name == "format") {
        std::string out;
        size_t next = 0;
        for (size_t i = 0; i < s.size(); ++i) {
          if (s[i] == '{' && i + 1 < s.size() && s[i + 1] == '{') { out.push_back('{'); ++i; continue; }
          if (s[i] == '}' && i + 1 < s.size() && s[i + 1] == '}') { out.push_back('}'); ++i; continue; }
          if (s[i] != '{') { out.push_back(s[i]); continue; }
          size_t e = s.find('}', i);
          if (e == std::string::npos) throw TemplateError("Single '{' encountered in format string");
          std::string field = s.substr(i + 1, e - i - 1);
          const Value* v = nullptr;
          if (field.empty()) v = next < a.pos.size() ? &a.pos[next++] : nullptr;
          else if (std::all_of(field.begin(), field.end(), [](char c) { return c >= '0' && c <= '9'; }))
            v = a.get(static_cast<size_t>(std::stoul(field)), "");
          else v = a.get(SIZE_MAX, field);
          if (!v) throw TemplateError("format field '" + field + "' has no argument");
          out += v->to_str();
          i = e;
        }
        return Value::string(std::move(out), true);
      }
    } else if (self.is_object()) {
      if (name == "items") {
        Array out;
        for (const auto& [k, v] : self.obj->items) out.push_back(tuple_of(key_value(k), v));
        return Value::array(std::move(out));
      }
      if (name == "keys") {
        Array out;
        for (const auto& kv : self.obj->items) out.push_back(key_value(kv.first));
        return Value::array(std::move(out));
      }
      if (name == "values") {
        Array out;
        for (const auto& kv : self.obj->items) out.push_back(kv.second);
        return Value::array(std::move(out));
      }
      if (name == "get") {
        const Value* key = a.get(0, "key");
        std::optional<std::string> k = key ? key_of(*key) : std::nullopt;
        const Value* v = k ? self.obj->find(*k) : nullptr;
        if (v) return *v;
        const Value* d = a.get(1, "default");
        return d ? *d : Value::none();
      }
      if (name == "copy") return Value::object(*self.obj);
    } else if (self.is_array()) {
      if (name == "index" || name == "count") {
        const Value* x = a.get(0, "value");
        int64_t n = 0;
        for (size_t k = 0; k < self.arr->size(); ++k)
          if (x && (*self.arr)[k] == *x) {
            if (name == "index") return Value::integer(static_cast<int64_t>(k));
            ++n;
          }
        if (name == "index") throw TemplateError("value is not in list");
        return Value::integer(n);
      }
    }
    throw TemplateError("access to attribute '" + name + "' of '" + self.type_name() + "' is unsafe.");
  });
}

bool is_method(const Value& obj, const std::string& name) {
  static const char* kStr[] = {"startswith", "endswith", "strip", "lstrip", "rstrip", "upper", "lower", "title",
                               "capitalize", "split", "rsplit", "replace", "find", "rfind", "index", "count",
                               "splitlines", "join", "isdigit", "isalpha", "isalnum", "isspace", "islower",
                               "isupper", "format"};
  static const char* kDict[] = {"items", "keys", "values", "get", "copy", "update", "pop", "setdefault", "clear",
                                "popitem"};
  static const char* kList[] = {"index", "count", "append", "extend", "insert", "pop", "remove", "sort", "reverse",
                                "clear"};
  auto in = [&](auto& list) {
    for (const char* m : list)
      if (name == m) return true;
    return false;
  };
  if (obj.is_string()) return in(kStr);
  if (obj.is_object() && !obj.is_namespace) return in(kDict);
  if (obj.is_array()) return in(kList);
  return false;
}

}  // namespace

Value dict_items(const Value& dict) {
  Array out;
  for (const auto& [k, v] : dict.obj->items) out.push_back(tuple_of(key_value(k), v));
  return Value::array(std::move(out));
}

Array iterate(const Value& v) {
  switch (v.type) {
    case Type::kUndefined: return {};
    case Type::kArray: return *v.arr;
    case Type::kObject: {
      Array out;
      for (const auto& kv : v.obj->items) out.push_back(key_value(kv.first));
      return out;
    }
    case Type::kString: {
      Array out;
      auto off = cp_offsets(v.s.str());
      for (size_t k = 0; k + 1 < off.size(); ++k) out.push_back(derived(v.s.str().substr(off[k], off[k + 1] - off[k]), v));
      return out;
    }
    default:
      throw TemplateError("'" + v.type_name() + "' is not iterable");
  }
}

int64_t length(const Value& v) {
  switch (v.type) {
    case Type::kUndefined: return 0;
    case Type::kString: return cp_count(v.s.str());
    case Type::kArray: return static_cast<int64_t>(v.arr->size());
    case Type::kObject: return static_cast<int64_t>(v.obj->items.size());
    default: throw TemplateError("object of type '" + v.type_name() + "' has no len()");
  }
}

Value get_attr(const Value& obj, const std::string& name) {
  if (is_method(obj, name)) return bound(obj, name);
  if (obj.is_object()) {
    if (const Value* v = obj.obj->find(name)) return *v;
  }
  return Value::undefined("'" + obj.type_name() + "' has no attribute '" + name + "'");
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_object() && key.is_string()) {
    if (const Value* v = obj.obj->find(key.s.str())) return *v;
    if (is_method(obj, key.s.str())) return bound(obj, key.s.str());
    return Value::undefined("'" + obj.type_name() + "' has no attribute '" + key.s.str() + "'");
  }
  if ((obj.is_array() || obj.is_string()) && (key.type == Type::kInt || key.type == Type::kBool)) {
    int64_t n = length(obj), k = key.type == Type::kBool ? key.b : key.i;
    if (k < 0) k += n;
    if (k < 0 || k >= n) return Value::undefined("'" + obj.type_name() + "' has no item " + std::to_string(key.i));
    if (obj.is_array()) return (*obj.arr)[static_cast<size_t>(k)];
    auto off = cp_offsets(obj.s.str());
    return sub(obj, off[static_cast<size_t>(k)], off[static_cast<size_t>(k) + 1] - off[static_cast<size_t>(k)]);
  }
  if (key.is_string()) return get_attr(obj, key.s.str());
  if (obj.is_object() && (key.type == Type::kInt || key.type == Type::kBool)) {  // dict literals with int keys
    if (const Value* v = obj.obj->find(*key_of(key))) return *v;
  }
  return Value::undefined("'" + obj.type_name() + "' has no item " + key.repr());
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (!obj.is_array() && !obj.is_string()) throw TemplateError("'" + obj.type_name() + "' is not subscriptable");
  auto as_int = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (v.type == Type::kInt) return v.i;
    if (v.type == Type::kBool) return v.b;
    throw TemplateError(std::string("slice ") + what + " must be an integer or None");
  };
  int64_t n = length(obj);
  int64_t st = as_int(step, "step").value_or(1);
  if (st == 0) throw TemplateError("slice step cannot be zero");
  auto norm = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) x += n;
    if (st > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  int64_t b = norm(as_int(start, "start"), st > 0 ? 0 : n - 1);
  int64_t e = norm(as_int(stop, "stop"), st > 0 ? n : -1);
  std::vector<int64_t> idx;
  for (int64_t k = b; st > 0 ? k < e : k > e;) {
    idx.push_back(k);
    if (st > 0 ? e - k <= st : k - e <= -st) break;  // the next index is past the end (and k + st may overflow)
    k += st;
  }
  if (obj.is_array()) {
    Array out;
    for (int64_t k : idx) out.push_back((*obj.arr)[static_cast<size_t>(k)]);
    Value r = Value::array(std::move(out));
    r.is_tuple = obj.is_tuple;
    return r;
  }
  auto off = cp_offsets(obj.s.str());
  if (st == 1) return idx.empty() ? sub(obj, 0, 0) : sub(obj, off[static_cast<size_t>(idx.front())], off[static_cast<size_t>(idx.back()) + 1] - off[static_cast<size_t>(idx.front())]);
  std::string out;
  for (int64_t k : idx) out += obj.s.str().substr(off[static_cast<size_t>(k)], off[static_cast<size_t>(k) + 1] - off[static_cast<size_t>(k)]);
  return derived(std::move(out), obj);
}

}  // namespace ninfer::jinja
