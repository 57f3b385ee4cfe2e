// Owns the value model of the chat-template interpreter: Python-like values whose strings remember their origin.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ninfer::jinja {

// An error raised while rendering; the interpreter adds the template line and rethrows it as ninfer::Error.
struct TemplateError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Text plus its origin, run by run. A run is "plain" when its bytes come from the render context (messages, tools,
// kwargs) and "special" when they come from the template itself (literal text and string literals). Concatenation
// (`~`, `+`, join) and taking substrings (trim/strip, split, contiguous slices, indexing) keep the runs; any other
// string operation (replace, upper, format, ...) gives a single run that is plain when any input byte was plain. Printed numbers, booleans, None and containers are plain.
class Text {
 public:
  Text() = default;
  Text(std::string s, bool plain) : s_(std::move(s)), plain_(plain) {}

  const std::string& str() const { return s_; }
  bool empty() const { return s_.empty(); }
  // True when any byte is plain.
  bool any_plain() const;
  // The runs as (end offset, plain) pairs, in order; at least one run for a non-empty text.
  std::vector<std::pair<size_t, bool>> runs() const;

  void append(const Text& t);
  void append(std::string_view s, bool plain);
  // The bytes [pos, pos + len) with their origins (substrings of a text keep the runs they cut through).
  Text substr(size_t pos, size_t len) const;

 private:
  std::string s_;
  bool plain_ = false;                         // origin of the whole text when runs_ is empty
  std::vector<std::pair<size_t, bool>> runs_;  // mixed origins: (end offset, plain)
};

struct Value;
using Array = std::vector<Value>;

// A Python dict in insertion order (JSON objects, dict literals, namespaces). Keys are strings; an integer key of a
// dict literal ({0: 1}) is stored as "\x01" followed by its digits (see int_key / key_of / key_value).
struct Object {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(const std::string& key, Value v);
};

class Interpreter;
struct CallArgs;
// A macro, a caller block or a global function (namespace, raise_exception, strftime_now, dict).
using Function = std::function<Value(Interpreter&, CallArgs&)>;

enum class Type { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kFunction };

struct Value {
  Type type = Type::kUndefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  Text s;
  std::shared_ptr<Array> arr;      // lists and tuples
  std::shared_ptr<Object> obj;     // dicts and namespaces
  std::shared_ptr<Function> fn;
  bool is_namespace = false;       // obj is a namespace() (attribute assignment allowed)
  bool is_tuple = false;
  std::string name;                // kUndefined: the missing name, for error messages; kFunction: its name

  Value() = default;
  static Value undefined(std::string name = {});
  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value number(double v);
  static Value string(std::string v, bool plain);
  static Value text(Text t);
  static Value array(Array a = {});
  static Value object(Object o = {});
  static Value function(std::string name, Function f);
  // JSON input: every string is plain.
  static Value from_json(const nlohmann::ordered_json& j);

  bool is_undefined() const { return type == Type::kUndefined; }
  bool is_none() const { return type == Type::kNone; }
  bool is_string() const { return type == Type::kString; }
  bool is_number() const { return type == Type::kInt || type == Type::kFloat; }
  bool is_array() const { return type == Type::kArray; }
  bool is_object() const { return type == Type::kObject; }
  double as_double() const { return type == Type::kFloat ? f : static_cast<double>(type == Type::kBool ? b : i); }

  bool truthy() const;
  // Python str(): strings as they are, None/True/False, repr(float), repr() of containers; undefined prints "".
  std::string to_str() const;
  // str() with origins: strings keep their runs, everything else is plain.
  Text to_text() const;
  // Python repr().
  std::string repr() const;
  // The jinja2 type name used in error messages ("dict object", "str object", ...).
  std::string type_name() const;
  nlohmann::ordered_json to_json() const;  // throws for undefined / functions
};

std::string int_key(int64_t k);
// The stored key for a lookup by `v` (a str, an int or a bool); nullopt for other types.
std::optional<std::string> key_of(const Value& v);
// A stored key as a value (str, plain; or int) and as text (what json.dumps writes for it).
Value key_value(const std::string& k);
std::string key_text(const std::string& k);

bool operator==(const Value& a, const Value& b);
// Python ordering (<) for numbers and strings, lexicographic for lists; throws kInvalidArgument otherwise.
bool less_than(const Value& a, const Value& b);

}  // namespace ninfer::jinja
