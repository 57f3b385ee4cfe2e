// Owns the chat-template lexer: template text -> literal text and tag tokens, with jinja2's whitespace control.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ninfer::jinja {

enum class Tok {
  kText,         // literal template text (after whitespace control)
  kVarBegin,     // {{
  kVarEnd,       // }}
  kBlockBegin,   // {%
  kBlockEnd,     // %}
  kName,         // identifier or keyword
  kString,       // string literal, escapes decoded
  kInt,
  kFloat,
  kOp,           // operator or punctuation: + - * / // % ** ~ [ ] ( ) { } == != > >= < <= = . : | , ;
  kEof,
};

struct Token {
  Tok kind;
  std::string text;  // kText / kName / kString / kOp
  int64_t ival = 0;
  double fval = 0;
  int line = 1;
};

// Splits a template as transformers' jinja2 environment does: trim_blocks (the first newline after a block or
// comment tag is dropped), lstrip_blocks (spaces and tabs before a block or comment tag at the start of a line are
// dropped; `{%+` keeps them), `{%-`/`-%}` style markers strip all whitespace on that side, \r\n and \r become \n,
// and one trailing newline of the template is dropped (keep_trailing_newline=False). Comments produce no tokens.
// Throws ninfer::Error(kInvalidArgument) "chat template line N: ..." for unterminated tags or bad characters.
std::vector<Token> lex(std::string_view source);

}  // namespace ninfer::jinja
