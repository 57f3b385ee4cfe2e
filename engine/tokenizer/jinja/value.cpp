// Owns the interpreter's values: construction from JSON, truthiness, str()/repr(), equality and ordering.
#include "engine/tokenizer/jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/tokenizer/py_json.h"

namespace ninfer::jinja {

bool Text::any_plain() const {
  if (runs_.empty()) return plain_ && !s_.empty();
  for (const auto& r : runs_)
    if (r.second) return true;
  return false;
}

std::vector<std::pair<size_t, bool>> Text::runs() const {
  if (s_.empty()) return {};
  if (runs_.empty()) return {{s_.size(), plain_}};
  return runs_;
}

void Text::append(std::string_view s, bool plain) {
  if (s.empty()) return;
  if (s_.empty()) {
    s_ = s;
    plain_ = plain;
    runs_.clear();
    return;
  }
  if (runs_.empty()) {
    if (plain == plain_) {
      s_ += s;
      return;
    }
    runs_.push_back({s_.size(), plain_});
  }
  s_ += s;
  if (runs_.back().second == plain)
    runs_.back().first = s_.size();
  else
    runs_.push_back({s_.size(), plain});
}

void Text::append(const Text& t) {
  size_t begin = 0;
  for (const auto& [end, plain] : t.runs()) {
    append(std::string_view(t.s_).substr(begin, end - begin), plain);
    begin = end;
  }
}

Text Text::substr(size_t pos, size_t len) const {
  Text out;
  size_t end = std::min(s_.size(), pos + len);
  size_t begin = 0;
  for (const auto& [run_end, plain] : runs()) {
    size_t a = std::max(begin, pos), b = std::min(run_end, end);
    if (a < b) out.append(std::string_view(s_).substr(a, b - a), plain);
    begin = run_end;
  }
  return out;
}

const Value* Object::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

Value* Object::find(std::string_view key) {
  for (auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void Object::set(const std::string& key, Value v) {
  if (Value* p = find(key))
    *p = std::move(v);
  else
    items.emplace_back(key, std::move(v));
}

Value Value::undefined(std::string name) {
  Value v;
  v.name = std::move(name);
  return v;
}
Value Value::none() {
  Value v;
  v.type = Type::kNone;
  return v;
}
Value Value::boolean(bool x) {
  Value v;
  v.type = Type::kBool;
  v.b = x;
  return v;
}
Value Value::integer(int64_t x) {
  Value v;
  v.type = Type::kInt;
  v.i = x;
  return v;
}
Value Value::number(double x) {
  Value v;
  v.type = Type::kFloat;
  v.f = x;
  return v;
}
Value Value::string(std::string x, bool plain) { return text(Text(std::move(x), plain)); }
Value Value::text(Text t) {
  Value v;
  v.type = Type::kString;
  v.s = std::move(t);
  return v;
}
Value Value::array(Array a) {
  Value v;
  v.type = Type::kArray;
  v.arr = std::make_shared<Array>(std::move(a));
  return v;
}
Value Value::object(Object o) {
  Value v;
  v.type = Type::kObject;
  v.obj = std::make_shared<Object>(std::move(o));
  return v;
}
Value Value::function(std::string name, Function f) {
  Value v;
  v.type = Type::kFunction;
  v.fn = std::make_shared<Function>(std::move(f));
  v.name = std::move(name);
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::null:
      return none();
    case T::boolean:
      return boolean(j.get<bool>());
    case T::number_integer:
      return integer(j.get<int64_t>());
    case T::number_unsigned:
      return integer(static_cast<int64_t>(j.get<uint64_t>()));
    case T::number_float:
      return number(j.get<double>());
    case T::string:
      return string(j.get<std::string>(), true);
    case T::array: {
      Array a;
      a.reserve(j.size());
      for (const auto& x : j) a.push_back(from_json(x));
      return array(std::move(a));
    }
    case T::object: {
      Object o;
      o.items.reserve(j.size());
      for (const auto& [k, x] : j.items()) o.items.emplace_back(k, from_json(x));
      return object(std::move(o));
    }
    default:
      return none();
  }
}

bool Value::truthy() const {
  switch (type) {
    case Type::kUndefined:
    case Type::kNone:
      return false;
    case Type::kBool:
      return b;
    case Type::kInt:
      return i != 0;
    case Type::kFloat:
      return f != 0;
    case Type::kString:
      return !s.empty();
    case Type::kArray:
      return !arr->empty();
    case Type::kObject:
      return is_namespace || !obj->items.empty();
    case Type::kFunction:
      return true;
  }
  return false;
}

namespace {

std::string float_str(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return py::float_repr(x);
}

std::string str_repr(const std::string& s) {
  char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(q) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back(q);
  return out;
}

}  // namespace

std::string Value::to_str() const {
  switch (type) {
    case Type::kUndefined:
      return "";
    case Type::kNone:
      return "None";
    case Type::kBool:
      return b ? "True" : "False";
    case Type::kInt:
      return std::to_string(i);
    case Type::kFloat:
      return float_str(f);
    case Type::kString:
      return s.str();
    default:
      return repr();
  }
}

Text Value::to_text() const {
  if (type == Type::kString) return s;
  return Text(to_str(), true);
}

std::string Value::repr() const {
  switch (type) {
    case Type::kString:
      return str_repr(s.str());
    case Type::kArray: {
      std::string out = is_tuple ? "(" : "[";
      for (size_t k = 0; k < arr->size(); ++k) {
        if (k) out += ", ";
        out += (*arr)[k].repr();
      }
      if (is_tuple && arr->size() == 1) out += ",";
      out += is_tuple ? ")" : "]";
      return out;
    }
    case Type::kObject: {
      if (is_namespace) return "<Namespace>";
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : obj->items) {
        if (!first) out += ", ";
        first = false;
        out += key_value(k).repr() + ": " + v.repr();
      }
      return out + "}";
    }
    case Type::kFunction:
      return "<function " + name + ">";
    case Type::kUndefined:
      return "Undefined";
    default:
      return to_str();
  }
}

std::string Value::type_name() const {
  switch (type) {
    case Type::kUndefined:
      return "Undefined";
    case Type::kNone:
      return "NoneType object";
    case Type::kBool:
      return "bool object";
    case Type::kInt:
      return "int object";
    case Type::kFloat:
      return "float object";
    case Type::kString:
      return "str object";
    case Type::kArray:
      return is_tuple ? "tuple object" : "list object";
    case Type::kObject:
      return is_namespace ? "Namespace object" : "dict object";
    case Type::kFunction:
      return "function object";
  }
  return "object";
}

nlohmann::ordered_json Value::to_json() const {
  switch (type) {
    case Type::kNone:
      return nullptr;
    case Type::kBool:
      return b;
    case Type::kInt:
      return i;
    case Type::kFloat:
      return f;
    case Type::kString:
      return s.str();
    case Type::kArray: {
      auto j = nlohmann::ordered_json::array();
      for (const auto& x : *arr) j.push_back(x.to_json());
      return j;
    }
    case Type::kObject: {
      if (is_namespace) throw TemplateError("Object of type Namespace is not JSON serializable");
      auto j = nlohmann::ordered_json::object();
      for (const auto& [k, v] : obj->items) j[key_text(k)] = v.to_json();
      return j;
    }
    case Type::kUndefined:
      throw TemplateError("Object of type Undefined is not JSON serializable");
    case Type::kFunction:
      throw TemplateError("Object of type function is not JSON serializable");
  }
  return nullptr;
}

std::string int_key(int64_t k) { return "\x01" + std::to_string(k); }

std::optional<std::string> key_of(const Value& v) {
  if (v.is_string()) return v.s.str();
  if (v.type == Type::kInt) return int_key(v.i);
  if (v.type == Type::kBool) return int_key(v.b);
  return std::nullopt;
}

Value key_value(const std::string& k) {
  if (!k.empty() && k[0] == '\x01') return Value::integer(std::stoll(k.substr(1)));
  return Value::string(k, true);
}

std::string key_text(const std::string& k) { return !k.empty() && k[0] == '\x01' ? k.substr(1) : k; }

bool operator==(const Value& a, const Value& b) {
  if (a.is_number() || a.type == Type::kBool) {
    if (!(b.is_number() || b.type == Type::kBool)) return false;
    if (a.type == Type::kFloat || b.type == Type::kFloat) return a.as_double() == b.as_double();
    return (a.type == Type::kBool ? a.b : a.i) == (b.type == Type::kBool ? b.b : b.i);
  }
  if (a.type != b.type) return false;
  switch (a.type) {
    case Type::kUndefined:
    case Type::kNone:
      return true;
    case Type::kString:
      return a.s.str() == b.s.str();
    case Type::kArray:
      if (a.arr->size() != b.arr->size()) return false;
      for (size_t k = 0; k < a.arr->size(); ++k)
        if (!((*a.arr)[k] == (*b.arr)[k])) return false;
      return true;
    case Type::kObject:
      if (a.is_namespace || b.is_namespace) return a.obj == b.obj;
      if (a.obj->items.size() != b.obj->items.size()) return false;
      for (const auto& [k, v] : a.obj->items) {
        const Value* w = b.obj->find(k);
        if (!w || !(v == *w)) return false;
      }
      return true;
    case Type::kFunction:
      return a.fn == b.fn;
    default:
      return false;
  }
}

bool less_than(const Value& a, const Value& b) {
  bool an = a.is_number() || a.type == Type::kBool, bn = b.is_number() || b.type == Type::kBool;
  if (an && bn) return a.as_double() < b.as_double();
  if (a.is_string() && b.is_string()) return a.s.str() < b.s.str();  // UTF-8 byte order = code point order
  if (a.is_array() && b.is_array()) {
    size_t n = std::min(a.arr->size(), b.arr->size());
    for (size_t k = 0; k < n; ++k) {
      if (less_than((*a.arr)[k], (*b.arr)[k])) return true;
      if (less_than((*b.arr)[k], (*a.arr)[k])) return false;
    }
    return a.arr->size() < b.arr->size();
  }
  throw TemplateError("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

}  // namespace ninfer::jinja
