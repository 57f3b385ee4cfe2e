// Owns the syntax tree of a parsed chat template: expression and statement nodes with their template lines.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/tokenizer/jinja/value.h"

namespace ninfer::jinja {

struct Expr;
using ExprP = std::shared_ptr<Expr>;
using KwArgs = std::vector<std::pair<std::string, ExprP>>;

struct Expr {
  enum class K {
    kLiteral,  // value
    kName,     // name
    kAttr,     // args[0].name
    kItem,     // args[0][args[1]]
    kSlice,    // args[0][args[1]:args[2]:args[3]] (null = omitted)
    kCall,     // args[0](args[1..], kwargs)
    kFilter,   // args[0] | name(args[1..], kwargs)
    kTest,     // args[0] is [not] name(args[1..])
    kNot,
    kNeg,
    kPos,
    kBinary,   // args[0] name args[1]: + - * / // % ** ~ in notin
    kAnd,
    kOr,
    kCompare,  // args[0] ops[0] args[1] ops[1] args[2] ...
    kCond,     // args[0] if args[1] else args[2] (args[2] null = undefined)
    kList,
    kTuple,
    kDict,     // key, value, key, value, ...
  };
  K k;
  int line = 0;
  std::string name;
  Value value;
  std::vector<ExprP> args;
  KwArgs kwargs;
  std::vector<std::string> ops;
  bool negated = false;
};

struct Stmt;
using StmtP = std::shared_ptr<Stmt>;
using Body = std::vector<StmtP>;

struct Param {
  std::string name;
  ExprP default_value;  // null: required
};

struct Stmt {
  enum class K {
    kText,       // text: literal template text
    kPrint,      // {{ expr }}
    kIf,         // branches (cond, body)...; else_body
    kFor,        // targets in expr [if cond]: body; else_body
    kSet,        // targets = expr (attr_target: targets = {namespace, attribute})
    kSetBlock,   // {% set target %}body{% endset %}
    kMacro,      // name(params): body
    kCallBlock,  // {% call(params) expr %}body{% endcall %}
    kFilterBlock,// {% filter name(args) %}body{% endfilter %}: expr is the filter call with a null subject
    kBreak,
    kContinue,
    kScope,      // body rendered as is ({% generation %} of transformers)
  };
  K k;
  int line = 0;
  std::string text;
  ExprP expr;
  ExprP cond;
  std::vector<std::pair<ExprP, Body>> branches;
  Body body, else_body;
  std::vector<std::string> targets;
  bool attr_target = false;
  std::vector<Param> params;
  std::string name;
};

}  // namespace ninfer::jinja
