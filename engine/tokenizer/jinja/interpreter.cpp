// Owns statement execution and expression evaluation of chat templates, with jinja2's scoping rules.
#include "engine/tokenizer/jinja/interpreter.h"

#include <climits>
#include <cmath>
#include <cstdio>

#include "engine/core/checked_int.h"
#include "engine/core/error.h"
#include "engine/tokenizer/jinja/builtins.h"

namespace ninfer::jinja {

const Value* CallArgs::get(size_t index, std::string_view name) const {
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return index < pos.size() ? &pos[index] : nullptr;
}

void raise_undefined(const Value& u) { throw TemplateError(u.name.empty() ? "value is undefined" : u.name); }

namespace {

[[noreturn]] void type_error(const std::string& op, const Value& a, const Value& b) {
  throw TemplateError("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() +
                      "'");
}

int64_t add(int64_t a, int64_t b) {
  int64_t r;
  if (add_overflows(a, b, &r)) throw TemplateError("integer overflow");
  return r;
}
int64_t sub(int64_t a, int64_t b) {
  int64_t r;
  if (sub_overflows(a, b, &r)) throw TemplateError("integer overflow");
  return r;
}
int64_t mul(int64_t a, int64_t b) {
  int64_t r;
  if (mul_overflows(a, b, &r)) throw TemplateError("integer overflow");
  return r;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) throw TemplateError("integer overflow");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

Value percent_format(const Value& fmt, const Value& args) {
  Array list = args.is_array() && args.is_tuple ? *args.arr : Array{args};
  const std::string& f = fmt.s.str();
  std::string out;
  size_t next = 0;
  bool plain = fmt.s.any_plain();
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out.push_back(f[i]);
      continue;
    }
    if (++i >= f.size()) throw TemplateError("incomplete format");
    char c = f[i];
    if (c == '%') {
      out.push_back('%');
      continue;
    }
    if (next >= list.size()) throw TemplateError("not enough arguments for format string");
    const Value& v = list[next++];
    plain = plain || !v.is_string() || v.s.any_plain();
    if (c == 's') out += v.to_str();
    else if (c == 'r') out += v.repr();
    else if (c == 'd' || c == 'i') {
      if (v.type == Type::kFloat) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.0f", std::trunc(v.f));
        out += buf;
      } else if (v.type == Type::kInt || v.type == Type::kBool) {
        out += std::to_string(v.type == Type::kBool ? v.b : v.i);
      } else {
        throw TemplateError("%d format: a real number is required, not " + v.type_name());
      }
    }
    else throw TemplateError(std::string("unsupported format character '") + c + "'");
  }
  if (next < list.size()) throw TemplateError("not all arguments converted during string formatting");
  return Value::string(std::move(out), plain);
}

Text Interpreter::run(const Body& body, const Object& context) {
  add_globals(globals_);
  auto root = std::make_shared<Frame>();
  for (const auto& [k, v] : context.items) (*root)[k] = v;
  scopes_ = {root};
  Text out;
  out_ = &out;
  struct Cleanup {
    Interpreter* in;
    ~Cleanup() {
      for (auto& ns : in->namespaces_) ns->items.clear();
      in->namespaces_.clear();
      in->scopes_.clear();
    }
  } cleanup{this};
  exec(body);
  return out;
}

Interpreter::Closure Interpreter::closure() const {
  Closure c;
  c.reserve(scopes_.size());
  for (const auto& f : scopes_) c.push_back(f);
  return c;
}

void Interpreter::step() {
  if (++steps_ > limits_.max_steps)
    throw TemplateError("template exceeded the limit of " + std::to_string(limits_.max_steps) +
                        " loop iterations and macro calls");
}

void Interpreter::emit(const Text& t) {
  out_->append(t);
  if (out_->str().size() > limits_.max_output_bytes)
    throw TemplateError("template output exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
}

Value Interpreter::lookup(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = (*it)->find(name);
    if (f != (*it)->end()) return f->second;
  }
  auto g = globals_.find(name);
  if (g != globals_.end()) return g->second;
  return Value::undefined("'" + name + "' is undefined");
}

void Interpreter::assign(const std::string& name, Value v) { (*scopes_.back())[name] = std::move(v); }

Interpreter::Flow Interpreter::exec(const Body& body) {
  for (const auto& s : body) {
    Flow f = exec(*s);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s) {
  line_ = s.line;
  switch (s.k) {
    case Stmt::K::kText:
      emit(Text(s.text, false));
      return Flow::kNormal;
    case Stmt::K::kPrint: {
      Value v = eval(*s.expr);
      emit(v.to_text());
      return Flow::kNormal;
    }
    case Stmt::K::kIf:
      for (const auto& [cond, body] : s.branches) {
        if (eval(*cond).truthy()) return exec(body);
      }
      return exec(s.else_body);
    case Stmt::K::kFor:
      exec_for(s);
      return Flow::kNormal;
    case Stmt::K::kSet:
    case Stmt::K::kSetBlock:
      exec_set(s);
      return Flow::kNormal;
    case Stmt::K::kMacro:
      assign(s.name, make_macro(s));
      return Flow::kNormal;
    case Stmt::K::kCallBlock: {
      const Expr& call_expr = *s.expr;
      Value callee = eval(*call_expr.args[0]);
      CallArgs args = eval_args(call_expr, 1);
      const Stmt* block = &s;
      Value caller = Value::function("caller", [block, scopes = closure()](Interpreter& in, CallArgs& a) {
        return in.call_macro(*block, scopes, a, nullptr);
      });
      args.kw.emplace_back("caller", caller);
      emit(call(callee, args).to_text());
      return Flow::kNormal;
    }
    case Stmt::K::kFilterBlock: {
      Text body;
      Text* saved = out_;
      out_ = &body;
      exec(s.body);
      out_ = saved;
      const Expr* f = s.expr.get();
      std::vector<const Expr*> chain;
      for (; f; f = f->args[0].get()) chain.push_back(f);
      Value v = Value::text(std::move(body));
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        CallArgs a = eval_args(**it, 1);
        v = apply_filter(*this, (*it)->name, v, a);
      }
      line_ = s.line;
      emit(v.to_text());
      return Flow::kNormal;
    }
    case Stmt::K::kBreak:
      return Flow::kBreak;
    case Stmt::K::kContinue:
      return Flow::kContinue;
    case Stmt::K::kScope:
      return exec(s.body);
  }
  return Flow::kNormal;
}

void Interpreter::exec_for(const Stmt& s) {
  Array items = iterate(eval(*s.expr));
  if (s.cond) {  // the `if` filter runs before the loop, in a scope holding the loop targets
    Array kept;
    for (auto& item : items) {
      scopes_.push_back(std::make_shared<Frame>());
      if (s.targets.size() == 1) {
        assign(s.targets[0], item);
      } else {
        Array parts = iterate(item);
        for (size_t k = 0; k < s.targets.size(); ++k) assign(s.targets[k], k < parts.size() ? parts[k] : Value());
      }
      bool keep = eval(*s.cond).truthy();
      scopes_.pop_back();
      if (keep) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec(s.else_body);
    return;
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t k = 0; k < n; ++k) {
    step();
    line_ = s.line;
    auto frame = std::make_shared<Frame>();
    scopes_.push_back(frame);
    const Value& item = items[static_cast<size_t>(k)];
    if (s.targets.size() == 1) {
      assign(s.targets[0], item);
    } else {
      Array parts = iterate(item);
      if (parts.size() != s.targets.size()) {
        scopes_.pop_back();
        throw TemplateError((parts.size() > s.targets.size() ? "too many values to unpack (expected "
                                                             : "not enough values to unpack (expected ") +
                            std::to_string(s.targets.size()) + ")");
      }
      for (size_t t = 0; t < parts.size(); ++t) assign(s.targets[t], parts[t]);
    }
    Object loop;
    loop.items.reserve(12);
    loop.items.emplace_back("index", Value::integer(k + 1));
    loop.items.emplace_back("index0", Value::integer(k));
    loop.items.emplace_back("revindex", Value::integer(n - k));
    loop.items.emplace_back("revindex0", Value::integer(n - k - 1));
    loop.items.emplace_back("first", Value::boolean(k == 0));
    loop.items.emplace_back("last", Value::boolean(k == n - 1));
    loop.items.emplace_back("length", Value::integer(n));
    loop.items.emplace_back("depth", Value::integer(1));
    loop.items.emplace_back("depth0", Value::integer(0));
    loop.items.emplace_back("previtem", k > 0 ? items[static_cast<size_t>(k - 1)] : Value::undefined("'previtem' is undefined"));
    loop.items.emplace_back("nextitem", k + 1 < n ? items[static_cast<size_t>(k + 1)] : Value::undefined("'nextitem' is undefined"));
    int64_t idx = k;
    loop.items.emplace_back("cycle", Value::function("cycle", [idx](Interpreter&, CallArgs& a) {
      if (a.pos.empty()) throw TemplateError("no items for cycling given");
      return a.pos[static_cast<size_t>(idx) % a.pos.size()];
    }));
    Value lv = Value::object(std::move(loop));
    lv.is_namespace = false;
    assign("loop", std::move(lv));
    Flow f;
    try {
      f = exec(s.body);
    } catch (...) {
      scopes_.pop_back();
      throw;
    }
    scopes_.pop_back();
    if (f == Flow::kBreak) break;
  }
}

void Interpreter::exec_set(const Stmt& s) {
  Value v;
  if (s.k == Stmt::K::kSetBlock) {
    Text body;
    Text* saved = out_;
    out_ = &body;
    try {
      exec(s.body);
    } catch (...) {
      out_ = saved;
      throw;
    }
    out_ = saved;
    v = Value::text(std::move(body));
    if (s.expr) {
      std::vector<const Expr*> chain;
      for (const Expr* f = s.expr.get(); f; f = f->args[0].get()) chain.push_back(f);
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        CallArgs a = eval_args(**it, 1);
        v = apply_filter(*this, (*it)->name, v, a);
      }
    }
  } else {
    v = eval(*s.expr);
  }
  line_ = s.line;
  if (s.attr_target) {
    Value ns = lookup(s.targets[0]);
    if (ns.type != Type::kObject || !ns.is_namespace)
      throw TemplateError("can only assign attributes to namespace objects, '" + s.targets[0] + "' is a " +
                          ns.type_name());
    if (s.targets[1].starts_with("_"))
      throw TemplateError("Chat templates cannot store underscore-prefixed attributes on a namespace");
    ns.obj->set(s.targets[1], std::move(v));
    return;
  }
  if (s.targets.size() == 1) {
    assign(s.targets[0], std::move(v));
    return;
  }
  Array parts = iterate(v);
  if (parts.size() != s.targets.size())
    throw TemplateError("cannot unpack " + std::to_string(parts.size()) + " values into " +
                        std::to_string(s.targets.size()) + " names");
  for (size_t k = 0; k < parts.size(); ++k) assign(s.targets[k], parts[k]);
}

Value Interpreter::make_macro(const Stmt& s) {
  const Stmt* def = &s;
  return Value::function(s.name, [def, scopes = closure()](Interpreter& in, CallArgs& a) {
    const Value* caller = nullptr;
    for (const auto& [k, v] : a.kw)
      if (k == "caller") caller = &v;
    return in.call_macro(*def, scopes, a, caller);
  });
}

Value Interpreter::call_macro(const Stmt& s, const Closure& closure, CallArgs& args, const Value* caller) {
  step();
  if (depth_ >= limits_.max_call_depth)
    throw TemplateError("macro calls nest deeper than " + std::to_string(limits_.max_call_depth));
  auto frame = std::make_shared<Frame>();
  Scopes saved_scopes = std::move(scopes_);
  scopes_.clear();
  for (const auto& w : closure)
    if (auto f = w.lock()) scopes_.push_back(std::move(f));  // a frame that ended (a loop body) is gone
  scopes_.push_back(frame);
  Text out;
  Text* saved_out = out_;
  out_ = &out;
  int saved_line = line_;
  ++depth_;
  struct Restore {
    Interpreter* in;
    Scopes* scopes;
    Text* out;
    int line;
    ~Restore() {
      in->scopes_ = std::move(*scopes);
      in->out_ = out;
      in->line_ = line;
      --in->depth_;
    }
  } restore{this, &saved_scopes, saved_out, saved_line};

  Array varargs;
  for (size_t k = 0; k < args.pos.size(); ++k) {
    if (k < s.params.size())
      (*frame)[s.params[k].name] = args.pos[k];
    else
      varargs.push_back(args.pos[k]);
  }
  Object kwargs;
  for (const auto& [k, v] : args.kw) {
    if (k == "caller") continue;
    bool is_param = false;
    for (const auto& p : s.params) is_param = is_param || p.name == k;
    if (is_param)
      (*frame)[k] = v;
    else
      kwargs.items.emplace_back(k, v);
  }
  for (const auto& p : s.params) {
    if (frame->count(p.name)) continue;
    (*frame)[p.name] = p.default_value ? eval(*p.default_value) : Value::undefined("'" + p.name + "' is undefined");
  }
  Value va = Value::array(std::move(varargs));
  va.is_tuple = true;
  (*frame)["varargs"] = va;
  (*frame)["kwargs"] = Value::object(std::move(kwargs));
  if (caller) (*frame)["caller"] = *caller;
  exec(s.body);
  return Value::text(std::move(out));
}

Value Interpreter::call(const Value& fn, CallArgs& args) {
  if (fn.is_undefined()) raise_undefined(fn);
  if (fn.type != Type::kFunction) throw TemplateError("'" + fn.type_name() + "' is not callable");
  return (*fn.fn)(*this, args);
}

CallArgs Interpreter::eval_args(const Expr& e, size_t first) {
  CallArgs a;
  for (size_t k = first; k < e.args.size(); ++k) a.pos.push_back(eval(*e.args[k]));
  for (const auto& [name, x] : e.kwargs) a.kw.emplace_back(name, eval(*x));
  return a;
}

bool Interpreter::compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return a == b;
  if (op == "!=") return !(a == b);
  if (op == "<") return less_than(a, b);
  if (op == ">") return less_than(b, a);
  if (op == "<=") return !less_than(b, a);
  if (op == ">=") return !less_than(a, b);
  bool in = false;
  if (b.is_string()) {
    if (a.is_undefined()) raise_undefined(a);
    if (!a.is_string())
      throw TemplateError("'in <string>' requires string as left operand, not " + a.type_name());
    in = b.s.str().find(a.s.str()) != std::string::npos;
  } else if (b.is_object()) {
    std::optional<std::string> k = key_of(a);
    in = k && b.obj->find(*k) != nullptr;
  } else if (b.is_array()) {
    for (const auto& x : *b.arr) in = in || x == a;
  } else if (b.is_undefined()) {
    in = false;
  } else {
    throw TemplateError("argument of type '" + b.type_name() + "' is not iterable");
  }
  return op == "in" ? in : !in;
}

Value Interpreter::eval_binary(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    Text t = a.to_text();
    t.append(b.to_text());
    return Value::text(std::move(t));
  }
  if (a.is_undefined()) raise_undefined(a);
  if (b.is_undefined()) raise_undefined(b);
  const bool an = a.is_number() || a.type == Type::kBool, bn = b.is_number() || b.type == Type::kBool;
  const bool ints = an && bn && a.type != Type::kFloat && b.type != Type::kFloat;
  auto ival = [](const Value& v) { return v.type == Type::kBool ? static_cast<int64_t>(v.b) : v.i; };
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      Text t = a.s;
      t.append(b.s);
      return Value::text(std::move(t));
    }
    if (a.is_array() && b.is_array()) {
      Array r = *a.arr;
      r.insert(r.end(), b.arr->begin(), b.arr->end());
      return Value::array(std::move(r));
    }
    if (ints) return Value::integer(add(ival(a), ival(b)));
    if (an && bn) return Value::number(a.as_double() + b.as_double());
    type_error(op, a, b);
  }
  if (op == "*" && (a.is_string() || b.is_string() || a.is_array() || b.is_array())) {
    const Value& seq = (a.is_string() || a.is_array()) ? a : b;
    const Value& cnt = &seq == &a ? b : a;
    if (cnt.type != Type::kInt && cnt.type != Type::kBool) type_error(op, a, b);
    int64_t n = std::max<int64_t>(0, ival(cnt));
    const size_t unit = seq.is_string() ? seq.s.str().size() : seq.arr->size();
    if (n > 0 && unit > 0 && static_cast<size_t>(n) > limits_.max_output_bytes / unit)
      throw TemplateError(seq.is_string() ? "string repetition is too large" : "list repetition is too large");
    if (seq.is_string()) {
      std::string r;
      for (int64_t k = 0; k < n; ++k) r += seq.s.str();
      return Value::string(std::move(r), seq.s.any_plain());
    }
    Array r;
    for (int64_t k = 0; k < n; ++k) r.insert(r.end(), seq.arr->begin(), seq.arr->end());
    return Value::array(std::move(r));
  }
  if (op == "%" && a.is_string()) return percent_format(a, b);
  if (!(an && bn)) type_error(op, a, b);
  if (op == "-") return ints ? Value::integer(sub(ival(a), ival(b))) : Value::number(a.as_double() - b.as_double());
  if (op == "*") return ints ? Value::integer(mul(ival(a), ival(b))) : Value::number(a.as_double() * b.as_double());
  if (op == "/") {
    if (b.as_double() == 0) throw TemplateError("division by zero");
    return Value::number(a.as_double() / b.as_double());
  }
  if (op == "//" || op == "%") {
    if (b.as_double() == 0) throw TemplateError(op == "//" ? "integer division or modulo by zero" : "modulo by zero");
    if (ints) {
      int64_t q = floor_div(ival(a), ival(b));
      return op == "//" ? Value::integer(q) : Value::integer(ival(a) - q * ival(b));
    }
    double q = std::floor(a.as_double() / b.as_double());
    return op == "//" ? Value::number(q) : Value::number(a.as_double() - q * b.as_double());
  }
  if (op == "**") {
    if (ints && ival(b) >= 0) {
      int64_t p = 1, base = ival(a);
      for (int64_t k = 0; k < ival(b); ++k) {
        p = mul(p, base);
        if (p == 0 || p == 1) break;
        if (p == -1 && (ival(b) - k - 1) % 2 == 0) break;
      }
      return Value::integer(p);
    }
    return Value::number(std::pow(a.as_double(), b.as_double()));
  }
  type_error(op, a, b);
}

Value Interpreter::eval(const Expr& e) {
  line_ = e.line;
  switch (e.k) {
    case Expr::K::kLiteral:
      return e.value;
    case Expr::K::kName:
      return lookup(e.name);
    case Expr::K::kAttr: {
      Value obj = eval(*e.args[0]);
      if (obj.is_undefined()) raise_undefined(obj);
      line_ = e.line;
      return get_attr(obj, e.name);
    }
    case Expr::K::kItem: {
      Value obj = eval(*e.args[0]);
      Value key = eval(*e.args[1]);
      if (obj.is_undefined()) raise_undefined(obj);
      line_ = e.line;
      return get_item(obj, key);
    }
    case Expr::K::kSlice: {
      Value obj = eval(*e.args[0]);
      Value parts[3];
      for (int k = 0; k < 3; ++k)
        parts[k] = e.args[static_cast<size_t>(k) + 1] ? eval(*e.args[static_cast<size_t>(k) + 1]) : Value::none();
      if (obj.is_undefined()) raise_undefined(obj);
      line_ = e.line;
      return get_slice(obj, parts[0], parts[1], parts[2]);
    }
    case Expr::K::kCall: {
      Value fn = eval(*e.args[0]);
      CallArgs a = eval_args(e, 1);
      line_ = e.line;
      return call(fn, a);
    }
    case Expr::K::kFilter: {
      Value subject = eval(*e.args[0]);
      CallArgs a = eval_args(e, 1);
      line_ = e.line;
      return apply_filter(*this, e.name, subject, a);
    }
    case Expr::K::kTest: {
      Value subject = eval(*e.args[0]);
      CallArgs a = eval_args(e, 1);
      line_ = e.line;
      return Value::boolean(apply_test(*this, e.name, subject, a) != e.negated);
    }
    case Expr::K::kNot:
      return Value::boolean(!eval(*e.args[0]).truthy());
    case Expr::K::kNeg:
    case Expr::K::kPos: {
      Value v = eval(*e.args[0]);
      if (v.is_undefined()) raise_undefined(v);
      bool neg = e.k == Expr::K::kNeg;
      if (v.type == Type::kInt) return Value::integer(neg ? sub(0, v.i) : v.i);
      if (v.type == Type::kBool) return Value::integer(neg ? -static_cast<int64_t>(v.b) : v.b);
      if (v.type == Type::kFloat) return Value::number(neg ? -v.f : v.f);
      throw TemplateError(std::string("bad operand type for unary ") + (neg ? "-" : "+") + ": '" + v.type_name() + "'");
    }
    case Expr::K::kBinary: {
      Value a = eval(*e.args[0]);
      Value b = eval(*e.args[1]);
      line_ = e.line;
      return eval_binary(e.name, a, b);
    }
    case Expr::K::kAnd: {
      Value a = eval(*e.args[0]);
      return a.truthy() ? eval(*e.args[1]) : a;
    }
    case Expr::K::kOr: {
      Value a = eval(*e.args[0]);
      return a.truthy() ? a : eval(*e.args[1]);
    }
    case Expr::K::kCompare: {
      Value left = eval(*e.args[0]);
      for (size_t k = 0; k < e.ops.size(); ++k) {
        Value right = eval(*e.args[k + 1]);
        line_ = e.line;
        if (!compare(e.ops[k], left, right)) return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case Expr::K::kCond:
      if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
      return e.args[2] ? eval(*e.args[2]) : Value::undefined("the inline if-expression evaluated to false and no else section was defined");
    case Expr::K::kList:
    case Expr::K::kTuple: {
      Array a;
      for (const auto& x : e.args) a.push_back(eval(*x));
      Value v = Value::array(std::move(a));
      v.is_tuple = e.k == Expr::K::kTuple;
      return v;
    }
    case Expr::K::kDict: {
      Object o;
      for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
        Value key = eval(*e.args[k]);
        std::optional<std::string> stored = key_of(key);
        if (!stored) throw TemplateError("only string and integer keys are supported in dict literals");
        o.set(*stored, eval(*e.args[k + 1]));
      }
      return Value::object(std::move(o));
    }
  }
  throw TemplateError("unknown expression");
}

}  // namespace ninfer::jinja
