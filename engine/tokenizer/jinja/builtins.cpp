// Owns the jinja2 tests and the global functions of chat templates (raise_exception, namespace, dict, range,
// strftime_now).
#include "engine/tokenizer/jinja/builtins.h"

#include <ctime>

#include "engine/core/checked_int.h"
#include "engine/tokenizer/jinja/py_ops.h"

namespace ninfer::jinja {

bool apply_test(Interpreter& in, const std::string& name, const Value& v, CallArgs& a) {
  (void)in;
  static const Value kUndef;
  const Value& x = a.pos.empty() ? kUndef : a.pos[0];
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number() || v.type == Type::kBool;
  if (name == "integer") return v.type == Type::kInt;
  if (name == "float") return v.type == Type::kFloat;
  if (name == "boolean") return v.type == Type::kBool;
  if (name == "true") return v.type == Type::kBool && v.b;
  if (name == "false") return v.type == Type::kBool && !v.b;
  if (name == "mapping") return v.is_object() && !v.is_namespace;
  if (name == "iterable") return v.is_string() || v.is_array() || (v.is_object() && !v.is_namespace) || v.is_undefined();
  if (name == "sequence") return v.is_string() || v.is_array() || (v.is_object() && !v.is_namespace) || v.is_undefined();
  if (name == "callable") return v.type == Type::kFunction;
  if (name == "eq" || name == "equalto" || name == "==") return v == x;
  if (name == "ne" || name == "!=") return !(v == x);
  if (name == "lt" || name == "lessthan" || name == "<") return less_than(v, x);
  if (name == "gt" || name == "greaterthan" || name == ">") return less_than(x, v);
  if (name == "le" || name == "<=") return !less_than(x, v);
  if (name == "ge" || name == ">=") return !less_than(v, x);
  if (name == "in") {
    if (x.is_string()) return v.is_string() && x.s.str().find(v.s.str()) != std::string::npos;
    if (x.is_object()) {
      std::optional<std::string> k = key_of(v);
      return k && x.obj->find(*k);
    }
    for (const auto& y : iterate(x))
      if (y == v) return true;
    return false;
  }
  if (name == "sameas") {
    if (v.type != x.type) return false;
    if (v.is_array()) return v.arr == x.arr;
    if (v.is_object()) return v.obj == x.obj;
    return v == x && (v.is_none() || v.type == Type::kBool || v.is_undefined());
  }
  if (name == "odd" || name == "even") {
    if (v.type != Type::kInt) throw TemplateError("test '" + name + "' needs an integer");
    return (v.i % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") return x.type == Type::kInt && x.i != 0 && v.type == Type::kInt && v.i % x.i == 0;
  if (name == "lower") return v.is_string() && lower_case(v.s.str()) == v.s.str();
  if (name == "upper") return v.is_string() && upper_case(v.s.str()) == v.s.str();
  if (name == "startingwith") return v.is_string() && x.is_string() && v.s.str().starts_with(x.s.str());
  if (name == "endingwith") return v.is_string() && x.is_string() && v.s.str().ends_with(x.s.str());
  throw TemplateError("No test named '" + name + "'.");
}

void add_globals(std::unordered_map<std::string, Value>& g) {
  g["raise_exception"] = Value::function("raise_exception", [](Interpreter&, CallArgs& a) -> Value {
    const Value* m = a.get(0, "message");
    throw TemplateError(m ? m->to_str() : std::string("raise_exception called"));
  });
  g["namespace"] = Value::function("namespace", [](Interpreter& in, CallArgs& a) {
    Object o;
    for (const auto& p : a.pos) {
      if (!p.is_object()) throw TemplateError("namespace() takes a mapping and keyword arguments");
      for (const auto& [k, v] : p.obj->items) o.set(k, v);
    }
    for (const auto& [k, v] : a.kw) {
      if (k.starts_with("_")) throw TemplateError("Chat templates cannot store underscore-prefixed attributes on a namespace, but got '" + k + "'.");
      o.set(k, v);
    }
    Value v = Value::object(std::move(o));
    v.is_namespace = true;
    in.adopt_namespace(v);
    return v;
  });
  g["dict"] = Value::function("dict", [](Interpreter&, CallArgs& a) {
    Object o;
    for (const auto& p : a.pos)
      if (p.is_object())
        for (const auto& [k, v] : p.obj->items) o.set(k, v);
    for (const auto& [k, v] : a.kw) o.set(k, v);
    return Value::object(std::move(o));
  });
  g["range"] = Value::function("range", [](Interpreter&, CallArgs& a) {
    int64_t start = 0, stop = 0, step = 1;
    auto iv = [](const Value& v) {
      if (v.type != Type::kInt) throw TemplateError("range() arguments must be integers");
      return v.i;
    };
    if (a.pos.size() == 1) stop = iv(a.pos[0]);
    else if (a.pos.size() >= 2) {
      start = iv(a.pos[0]);
      stop = iv(a.pos[1]);
      if (a.pos.size() > 2) step = iv(a.pos[2]);
    }
    if (step == 0) throw TemplateError("range() arg 3 must not be zero");
    Array out;
    for (int64_t k = start; step > 0 ? k < stop : k > stop;) {
      if (out.size() >= 100000) throw TemplateError("range too big");
      out.push_back(Value::integer(k));
      if (add_overflows(k, step, &k)) break;
    }
    return Value::array(std::move(out));
  });
  g["strftime_now"] = Value::function("strftime_now", [](Interpreter& in, CallArgs& a) {
    std::time_t t = in.now().value_or(std::time(nullptr));
    std::tm tm{};
#ifdef _WIN32
    localtime_s(&tm, &t);  // MSVC and MinGW: the CRT's thread-safe form, arguments swapped
#else
    localtime_r(&t, &tm);
#endif
    std::string fmt = a.pos.empty() ? std::string() : a.pos[0].to_str();
    char buf[512];
    size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
    return Value::string(std::string(buf, n), false);
  });
}

}  // namespace ninfer::jinja
