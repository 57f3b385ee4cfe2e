// Owns the evaluation of a parsed chat template: scopes, statements, expressions, macros and resource limits.
#pragma once

#include <cstddef>
#include <ctime>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/tokenizer/jinja/ast.h"
#include "engine/tokenizer/jinja/value.h"

namespace ninfer::jinja {

// Bounds that keep a hostile template from hanging or exhausting the server.
struct Limits {
  size_t max_output_bytes = 32u << 20;   // rendered text
  size_t max_steps = 5'000'000;          // loop iterations + macro calls, all together
  int max_call_depth = 64;               // nested macro calls
};

// Positional and keyword arguments of a call, filter or test.
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // The argument named `name` or at position `index`; nullptr when absent. Consumed arguments are not checked.
  const Value* get(size_t index, std::string_view name) const;
};

class Interpreter {
 public:
  Interpreter(const Limits& limits, std::optional<std::time_t> now) : limits_(limits), now_(now) {}

  // Renders `body` with `context` as the template's variables (plus the globals range, namespace, dict,
  // raise_exception and strftime_now). Throws TemplateError or ninfer::Error; see line().
  Text run(const Body& body, const Object& context);

  // The template line of the node being evaluated (for error messages).
  int line() const { return line_; }
  std::optional<std::time_t> now() const { return now_; }

  Value eval(const Expr& e);
  Value call(const Value& fn, CallArgs& args);
  // Namespaces are the only mutable values, so the only way to a reference cycle (ns.self = ns): run() empties
  // every namespace it created when it ends.
  void adopt_namespace(const Value& ns) { namespaces_.push_back(ns.obj); }

 private:
  using Frame = std::unordered_map<std::string, Value>;
  using Scopes = std::vector<std::shared_ptr<Frame>>;
  // What a macro or caller sees of the scopes it was defined in. Weak: the macro lives in one of these frames.
  using Closure = std::vector<std::weak_ptr<Frame>>;
  enum class Flow { kNormal, kBreak, kContinue };

  Flow exec(const Body& body);
  Flow exec(const Stmt& s);
  void exec_for(const Stmt& s);
  void exec_set(const Stmt& s);
  Value make_macro(const Stmt& s);
  Value call_macro(const Stmt& s, const Closure& closure, CallArgs& args, const Value* caller);
  Closure closure() const;
  Value eval_binary(const std::string& op, const Value& a, const Value& b);
  bool compare(const std::string& op, const Value& a, const Value& b);
  CallArgs eval_args(const Expr& e, size_t first);
  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v);
  void emit(const Text& t);
  void step();

  Limits limits_;
  std::optional<std::time_t> now_;
  Scopes scopes_;
  Frame globals_;
  std::vector<std::shared_ptr<Object>> namespaces_;
  Text* out_ = nullptr;
  int line_ = 0;
  size_t steps_ = 0;
  int depth_ = 0;
};

[[noreturn]] void raise_undefined(const Value& u);

// Python's printf-style `fmt % args` for %s, %d, %i, %r and %% (args: a tuple, or one value).
Value percent_format(const Value& fmt, const Value& args);

}  // namespace ninfer::jinja
