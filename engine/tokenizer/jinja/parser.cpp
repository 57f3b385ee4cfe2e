// Owns the recursive-descent parser of chat templates (statements and expressions).
#include "engine/tokenizer/jinja/parser.h"

#include <initializer_list>

#include "engine/core/error.h"
#include "engine/tokenizer/jinja/lexer.h"

namespace ninfer::jinja {
namespace {

constexpr int kMaxDepth = 100;  // nesting of expressions and blocks

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  Body parse_template() {
    std::string stop;
    Body b = parse_body({}, &stop);
    return b;
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    fail(ErrorKind::kInvalidArgument, "chat template line {}: {}", cur().line, what);
  }
  const Token& cur() const { return t_[p_]; }
  const Token& peek(size_t k = 1) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  bool is_op(const char* op) const { return cur().kind == Tok::kOp && cur().text == op; }
  bool is_name(const char* n) const { return cur().kind == Tok::kName && cur().text == n; }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    ++p_;
    return true;
  }
  bool accept_name(const char* n) {
    if (!is_name(n)) return false;
    ++p_;
    return true;
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) error(std::string("expected '") + op + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().kind != Tok::kName) error("expected a name, got " + describe(cur()));
    return t_[p_++].text;
  }
  void expect_block_end() {
    if (cur().kind != Tok::kBlockEnd) error("expected end of statement block, got " + describe(cur()));
    ++p_;
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::kEof: return "end of template";
      case Tok::kVarEnd: return "'}}'";
      case Tok::kBlockEnd: return "'%}'";
      case Tok::kText: return "template text";
      case Tok::kString: return "string literal";
      case Tok::kInt:
      case Tok::kFloat: return "number";
      default: return "'" + t.text + "'";
    }
  }

  struct DepthGuard {
    Parser* p;
    explicit DepthGuard(Parser* parser) : p(parser) {
      if (++p->depth_ > kMaxDepth) p->error("template nesting is too deep");
    }
    ~DepthGuard() { --p->depth_; }
  };

  ExprP make(Expr::K k, int line) {
    auto e = std::make_shared<Expr>();
    e->k = k;
    e->line = line;
    return e;
  }

  // Statements until a block tag whose name is in `stops`; the stop name is stored in *stop (tag left open).
  Body parse_body(std::initializer_list<const char*> stops, std::string* stop) {
    DepthGuard g(this);
    Body body;
    for (;;) {
      const Token& tk = cur();
      if (tk.kind == Tok::kEof) {
        if (stops.size() == 0) return body;
        error(std::string("unexpected end of template, expected '") + *stops.begin() + "'");
      }
      if (tk.kind == Tok::kText) {
        auto s = std::make_shared<Stmt>();
        s->k = Stmt::K::kText;
        s->line = tk.line;
        s->text = tk.text;
        body.push_back(s);
        ++p_;
      } else if (tk.kind == Tok::kVarBegin) {
        ++p_;
        auto s = std::make_shared<Stmt>();
        s->k = Stmt::K::kPrint;
        s->line = tk.line;
        s->expr = parse_expression();
        if (cur().kind != Tok::kVarEnd) error("expected '}}', got " + describe(cur()));
        ++p_;
        body.push_back(s);
      } else if (tk.kind == Tok::kBlockBegin) {
        const Token& nt = peek();
        if (nt.kind != Tok::kName) {
          ++p_;
          error("expected a statement name, got " + describe(nt));
        }
        for (const char* s : stops)
          if (nt.text == s) {
            ++p_;  // past {%; the caller consumes the name
            *stop = s;
            return body;
          }
        ++p_;
        body.push_back(parse_statement());
      } else {
        error("unexpected " + describe(tk));
      }
    }
  }

  StmtP parse_statement() {
    int line = cur().line;
    std::string kw = expect_name();
    auto s = std::make_shared<Stmt>();
    s->line = line;
    std::string stop;
    if (kw == "if") {
      s->k = Stmt::K::kIf;
      ExprP cond = parse_expression();
      expect_block_end();
      for (;;) {
        Body b = parse_body({"elif", "else", "endif"}, &stop);
        s->branches.emplace_back(cond, std::move(b));
        ++p_;
        if (stop == "elif") {
          cond = parse_expression();
          expect_block_end();
          continue;
        }
        if (stop == "else") {
          expect_block_end();
          s->else_body = parse_body({"endif"}, &stop);
          ++p_;
        }
        expect_block_end();
        break;
      }
    } else if (kw == "for") {
      s->k = Stmt::K::kFor;
      do {
        s->targets.push_back(expect_name());
      } while (accept_op(","));
      if (!accept_name("in")) error("expected 'in' in for loop, got " + describe(cur()));
      s->expr = parse_tuple(/*with_condexpr=*/false);
      if (accept_name("if")) s->cond = parse_expression();
      if (accept_name("recursive")) error("recursive for loops are not supported");
      expect_block_end();
      s->body = parse_body({"endfor", "else"}, &stop);
      ++p_;
      if (stop == "else") {
        expect_block_end();
        s->else_body = parse_body({"endfor"}, &stop);
        ++p_;
      }
      expect_block_end();
    } else if (kw == "set") {
      std::string first = expect_name();
      s->targets.push_back(first);
      if (accept_op(".")) {
        s->attr_target = true;
        s->targets.push_back(expect_name());
      } else {
        while (accept_op(",")) s->targets.push_back(expect_name());
      }
      if (accept_op("=")) {
        s->k = Stmt::K::kSet;
        s->expr = parse_tuple(true);
        expect_block_end();
      } else {
        if (s->attr_target || s->targets.size() != 1) error("block set takes one name");
        s->k = Stmt::K::kSetBlock;
        if (accept_op("|")) s->expr = parse_filter_chain(nullptr);
        expect_block_end();
        s->body = parse_body({"endset"}, &stop);
        ++p_;
        expect_block_end();
      }
    } else if (kw == "macro") {
      s->k = Stmt::K::kMacro;
      s->name = expect_name();
      parse_params(s->params);
      expect_block_end();
      s->body = parse_body({"endmacro"}, &stop);
      ++p_;
      if (cur().kind == Tok::kName) ++p_;  // {% endmacro name %}
      expect_block_end();
    } else if (kw == "call") {
      s->k = Stmt::K::kCallBlock;
      if (is_op("(")) parse_params(s->params);
      s->expr = parse_expression();
      if (s->expr->k != Expr::K::kCall) error("expected a call after 'call'");
      expect_block_end();
      s->body = parse_body({"endcall"}, &stop);
      ++p_;
      expect_block_end();
    } else if (kw == "filter") {
      s->k = Stmt::K::kFilterBlock;
      s->expr = parse_filter_chain(nullptr, /*first_has_pipe=*/false);
      expect_block_end();
      s->body = parse_body({"endfilter"}, &stop);
      ++p_;
      expect_block_end();
    } else if (kw == "break" || kw == "continue") {
      s->k = kw == "break" ? Stmt::K::kBreak : Stmt::K::kContinue;
      expect_block_end();
    } else if (kw == "generation") {
      s->k = Stmt::K::kScope;
      expect_block_end();
      s->body = parse_body({"endgeneration"}, &stop);
      ++p_;
      expect_block_end();
    } else {
      p_ -= 1;
      error("unsupported statement '" + kw + "'");
    }
    return s;
  }

  void parse_params(std::vector<Param>& params) {
    expect_op("(");
    while (!is_op(")")) {
      if (!params.empty()) expect_op(",");
      if (is_op(")")) break;
      Param prm;
      prm.name = expect_name();
      if (accept_op("=")) prm.default_value = parse_expression();
      params.push_back(std::move(prm));
    }
    expect_op(")");
  }

  // `a, b` without parentheses is a tuple where jinja2 allows one (for iterables, set values).
  ExprP parse_tuple(bool with_condexpr) {
    int line = cur().line;
    ExprP first = with_condexpr ? parse_expression() : parse_or();
    if (!is_op(",")) return first;
    ExprP t = make(Expr::K::kTuple, line);
    t->args.push_back(first);
    while (accept_op(",")) {
      if (cur().kind == Tok::kBlockEnd || cur().kind == Tok::kVarEnd || is_name("if")) break;
      t->args.push_back(with_condexpr ? parse_expression() : parse_or());
    }
    return t;
  }

  ExprP parse_expression() {
    DepthGuard g(this);
    int line = cur().line;
    ExprP e = parse_or();
    while (accept_name("if")) {
      ExprP c = make(Expr::K::kCond, line);
      c->args.push_back(e);
      c->args.push_back(parse_or());
      c->args.push_back(accept_name("else") ? parse_expression() : nullptr);
      e = c;
    }
    return e;
  }

  ExprP parse_or() {
    ExprP l = parse_and();
    while (is_name("or")) {
      ExprP e = make(Expr::K::kOr, cur().line);
      ++p_;
      e->args = {l, parse_and()};
      l = e;
    }
    return l;
  }
  ExprP parse_and() {
    ExprP l = parse_not();
    while (is_name("and")) {
      ExprP e = make(Expr::K::kAnd, cur().line);
      ++p_;
      e->args = {l, parse_not()};
      l = e;
    }
    return l;
  }
  ExprP parse_not() {
    if (is_name("not")) {
      ExprP e = make(Expr::K::kNot, cur().line);
      ++p_;
      DepthGuard g(this);
      e->args = {parse_not()};
      return e;
    }
    return parse_compare();
  }
  ExprP parse_compare() {
    int line = cur().line;
    ExprP first = parse_math1();
    ExprP cmp;
    for (;;) {
      std::string op;
      if (cur().kind == Tok::kOp &&
          (is_op("==") || is_op("!=") || is_op("<") || is_op("<=") || is_op(">") || is_op(">="))) {
        op = cur().text;
        ++p_;
      } else if (is_name("in")) {
        op = "in";
        ++p_;
      } else if (is_name("not") && peek().kind == Tok::kName && peek().text == "in") {
        op = "notin";
        p_ += 2;
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(Expr::K::kCompare, line);
        cmp->args.push_back(first);
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? cmp : first;
  }
  ExprP binary(const std::string& op, ExprP l, ExprP r, int line) {
    ExprP e = make(Expr::K::kBinary, line);
    e->name = op;
    e->args = {std::move(l), std::move(r)};
    return e;
  }
  ExprP parse_math1() {
    ExprP l = parse_concat();
    while (is_op("+") || is_op("-")) {
      std::string op = cur().text;
      int line = cur().line;
      ++p_;
      l = binary(op, l, parse_concat(), line);
    }
    return l;
  }
  ExprP parse_concat() {
    ExprP l = parse_math2();
    while (is_op("~")) {
      int line = cur().line;
      ++p_;
      l = binary("~", l, parse_math2(), line);
    }
    return l;
  }
  ExprP parse_math2() {
    ExprP l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = cur().text;
      int line = cur().line;
      ++p_;
      l = binary(op, l, parse_pow(), line);
    }
    return l;
  }
  ExprP parse_pow() {
    ExprP l = parse_unary(true);
    while (is_op("**")) {
      int line = cur().line;
      ++p_;
      l = binary("**", l, parse_unary(true), line);
    }
    return l;
  }
  ExprP parse_unary(bool with_filter) {
    DepthGuard g(this);
    int line = cur().line;
    ExprP node;
    if (is_op("-") || is_op("+")) {
      node = make(is_op("-") ? Expr::K::kNeg : Expr::K::kPos, line);
      ++p_;
      node->args = {parse_unary(false)};
    } else {
      node = parse_primary();
    }
    node = parse_postfix(node);
    if (with_filter) node = parse_filter_expr(node);
    return node;
  }

  ExprP parse_primary() {
    const Token& tk = cur();
    int line = tk.line;
    if (tk.kind == Tok::kName) {
      ++p_;
      ExprP e = make(Expr::K::kLiteral, line);
      if (tk.text == "true" || tk.text == "True") {
        e->value = Value::boolean(true);
      } else if (tk.text == "false" || tk.text == "False") {
        e->value = Value::boolean(false);
      } else if (tk.text == "none" || tk.text == "None") {
        e->value = Value::none();
      } else {
        e->k = Expr::K::kName;
        e->name = tk.text;
      }
      return e;
    }
    if (tk.kind == Tok::kString) {
      std::string s;
      while (cur().kind == Tok::kString) s += t_[p_++].text;
      ExprP e = make(Expr::K::kLiteral, line);
      e->value = Value::string(std::move(s), false);
      return e;
    }
    if (tk.kind == Tok::kInt || tk.kind == Tok::kFloat) {
      ++p_;
      ExprP e = make(Expr::K::kLiteral, line);
      e->value = tk.kind == Tok::kInt ? Value::integer(tk.ival) : Value::number(tk.fval);
      return e;
    }
    if (accept_op("(")) {
      if (accept_op(")")) return make(Expr::K::kTuple, line);
      ExprP first = parse_expression();
      if (accept_op(")")) return first;
      ExprP t = make(Expr::K::kTuple, line);
      t->args.push_back(first);
      while (accept_op(",")) {
        if (is_op(")")) break;
        t->args.push_back(parse_expression());
      }
      expect_op(")");
      return t;
    }
    if (accept_op("[")) {
      ExprP l = make(Expr::K::kList, line);
      while (!is_op("]")) {
        if (!l->args.empty()) expect_op(",");
        if (is_op("]")) break;
        l->args.push_back(parse_expression());
      }
      expect_op("]");
      return l;
    }
    if (accept_op("{")) {
      ExprP d = make(Expr::K::kDict, line);
      while (!is_op("}")) {
        if (!d->args.empty()) expect_op(",");
        if (is_op("}")) break;
        d->args.push_back(parse_expression());
        expect_op(":");
        d->args.push_back(parse_expression());
      }
      expect_op("}");
      return d;
    }
    error("unexpected " + describe(tk));
  }

  void parse_call_args(ExprP& call) {
    expect_op("(");
    while (!is_op(")")) {
      if (call->args.size() > 1 || !call->kwargs.empty()) expect_op(",");
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) error("*args and **kwargs in calls are not supported");
      if (cur().kind == Tok::kName && peek().kind == Tok::kOp && peek().text == "=") {
        std::string key = t_[p_].text;
        p_ += 2;
        call->kwargs.emplace_back(key, parse_expression());
      } else {
        if (!call->kwargs.empty()) error("positional argument after keyword argument");
        call->args.push_back(parse_expression());
      }
    }
    expect_op(")");
  }

  ExprP parse_postfix(ExprP node) {
    for (;;) {
      int line = cur().line;
      if (accept_op(".")) {
        if (cur().kind == Tok::kInt) {
          ExprP idx = make(Expr::K::kLiteral, line);
          idx->value = Value::integer(t_[p_++].ival);
          ExprP e = make(Expr::K::kItem, line);
          e->args = {node, idx};
          node = e;
        } else {
          ExprP e = make(Expr::K::kAttr, line);
          e->name = expect_name();
          e->args = {node};
          node = e;
        }
      } else if (accept_op("[")) {
        ExprP parts[3];
        bool slice = false;
        for (int k = 0; k < 3; ++k) {
          if (!is_op(":") && !is_op("]")) parts[k] = parse_expression();
          if (k < 2 && accept_op(":")) {
            slice = true;
            continue;
          }
          break;
        }
        expect_op("]");
        ExprP e = make(slice ? Expr::K::kSlice : Expr::K::kItem, line);
        e->args.push_back(node);
        if (slice)
          for (auto& p : parts) e->args.push_back(p);
        else
          e->args.push_back(parts[0]);
        if (!slice && !parts[0]) error("expected a subscript");
        node = e;
      } else if (is_op("(")) {
        ExprP e = make(Expr::K::kCall, line);
        e->args.push_back(node);
        parse_call_args(e);
        node = e;
      } else {
        return node;
      }
    }
  }

  // After `|` (or at the start of a filter block when !first_has_pipe): name[(args)] [| name[(args)] ...].
  ExprP parse_filter_chain(ExprP subject, bool first_has_pipe = true) {
    (void)first_has_pipe;
    ExprP node = subject;
    do {
      int line = cur().line;
      ExprP f = make(Expr::K::kFilter, line);
      f->name = expect_name();
      while (accept_op(".")) f->name += "." + expect_name();
      f->args.push_back(node);
      if (is_op("(")) parse_call_args(f);
      node = f;
    } while (accept_op("|"));
    return node;
  }

  ExprP parse_filter_expr(ExprP node) {
    for (;;) {
      if (accept_op("|")) {
        node = parse_filter_chain(node);
      } else if (is_name("is")) {
        int line = cur().line;
        ++p_;
        ExprP t = make(Expr::K::kTest, line);
        t->negated = accept_name("not");
        t->name = expect_name();
        while (accept_op(".")) t->name += "." + expect_name();
        t->args.push_back(node);
        if (is_op("(")) {
          parse_call_args(t);
        } else if ((cur().kind == Tok::kName || cur().kind == Tok::kString || cur().kind == Tok::kInt ||
                    cur().kind == Tok::kFloat || is_op("[") || is_op("{")) &&
                   !(is_name("else") || is_name("or") || is_name("and"))) {
          if (is_name("is")) error("You cannot chain multiple tests with is");
          t->args.push_back(parse_postfix(parse_primary()));
        }
        node = t;
      } else if (is_op("(")) {
        ExprP e = make(Expr::K::kCall, cur().line);
        e->args.push_back(node);
        parse_call_args(e);
        node = e;
      } else {
        return node;
      }
    }
  }

  std::vector<Token> t_;
  size_t p_ = 0;
  int depth_ = 0;
};

}  // namespace

Body parse(std::string_view source) { return Parser(lex(source)).parse_template(); }

}  // namespace ninfer::jinja
