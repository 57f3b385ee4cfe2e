// Owns the chat-template lexer: text/tag splitting with whitespace control and the tokens inside tags.
#include "engine/tokenizer/jinja/lexer.h"

#include <cstring>

#include "engine/core/error.h"
#include "engine/tokenizer/unicode.h"

namespace ninfer::jinja {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

[[noreturn]] void lex_error(int line, std::string_view what) {
  fail(ErrorKind::kInvalidArgument, "chat template line {}: {}", line, what);
}

int count_newlines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}


int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Python's unicode-escape decoding of a string literal body (unknown escapes stay as written).
std::string decode_escapes(std::string_view body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 == body.size()) {
      out.push_back(c);
      continue;
    }
    char e = body[++i];
    switch (e) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'r': out.push_back('\r'); break;
      case '\\': out.push_back('\\'); break;
      case '\'': out.push_back('\''); break;
      case '"': out.push_back('"'); break;
      case 'a': out.push_back('\a'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'v': out.push_back('\v'); break;
      case '\n': break;  // line continuation
      case 'x':
      case 'u':
      case 'U': {
        size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (size_t k = 1; k <= n; ++k) {
          int h = i + k < body.size() ? hex_value(body[i + k]) : -1;
          if (h < 0) lex_error(line, "truncated escape in string literal");
          cp = cp * 16 + static_cast<uint32_t>(h);
        }
        if (cp > 0x10FFFF) lex_error(line, "illegal Unicode character in string literal");
        unicode::append_utf8(out, static_cast<char32_t>(cp));
        i += n;
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          uint32_t cp = static_cast<uint32_t>(e - '0');
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k)
            cp = cp * 8 + static_cast<uint32_t>(body[++i] - '0');
          unicode::append_utf8(out, static_cast<char32_t>(cp));
        } else {
          out.push_back('\\');
          out.push_back(e);
        }
    }
  }
  return out;
}

constexpr const char* kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(",
                                ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};

class Lexer {
 public:
  explicit Lexer(std::string src) : s_(std::move(src)) {}

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < s_.size()) {
      size_t tag = find_tag(pos_);
      std::string_view text(s_.data() + pos_, (tag == std::string::npos ? s_.size() : tag) - pos_);
      if (tag == std::string::npos) {
        push_text(text);
        break;
      }
      char kind = s_[tag + 1];  // '{', '%' or '#'
      char sign = tag + 2 < s_.size() ? s_[tag + 2] : 0;
      std::string_view kept = text;
      if (sign == '-') {
        size_t e = kept.size();
        while (e > 0 && is_ws(kept[e - 1])) --e;
        kept = kept.substr(0, e);
      } else if (sign != '+' && kind != '{') {  // lstrip_blocks
        size_t nl = kept.rfind('\n');
        size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting) && l_pos < kept.size()) {
          bool all_ws = true;
          for (size_t k = l_pos; k < kept.size(); ++k) all_ws = all_ws && is_ws(kept[k]);
          if (all_ws) kept = kept.substr(0, l_pos);
        }
      }
      push_text(kept);
      line_ += count_newlines(text.substr(kept.size()));
      pos_ = tag + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (kind == '%' && lex_raw()) {
      } else if (kind == '#')
        lex_comment();
      else
        lex_tag(kind == '{');
      line_starting = pos_ > 0 && s_[pos_ - 1] == '\n';
    }
    out_.push_back(Token{Tok::kEof, "", 0, 0, line_});
    return std::move(out_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t p = s_.find('{', from); p != std::string::npos; p = s_.find('{', p + 1)) {
      if (p + 1 < s_.size() && (s_[p + 1] == '{' || s_[p + 1] == '%' || s_[p + 1] == '#')) return p;
    }
    return std::string::npos;
  }

  void push_text(std::string_view t) {
    if (t.empty()) return;
    out_.push_back(Token{Tok::kText, std::string(t), 0, 0, line_});
    line_ += count_newlines(t);
  }

  // After an end marker: `-` strips all following whitespace; a block/comment end (trim_blocks) drops one newline.
  void after_end(bool minus, bool block) {
    if (minus) {
      while (pos_ < s_.size() && is_ws(s_[pos_])) line_ += s_[pos_++] == '\n';
    } else if (block && pos_ < s_.size() && s_[pos_] == '\n') {
      ++pos_;
      ++line_;
    }
  }

  // {% raw %}...{% endraw %}: the text between is literal. Returns false when the tag is not `raw`.
  bool lex_raw() {
    size_t p = pos_;
    auto skip_ws = [&](size_t q) {
      while (q < s_.size() && is_ws(s_[q])) ++q;
      return q;
    };
    p = skip_ws(p);
    if (s_.compare(p, 3, "raw") != 0) return false;
    p = skip_ws(p + 3);
    bool minus = s_.compare(p, 3, "-%}") == 0;
    if (!minus && s_.compare(p, 2, "%}") != 0) return false;
    int start = line_;
    line_ += count_newlines(std::string_view(s_).substr(pos_, p - pos_));
    pos_ = p + (minus ? 3 : 2);
    if (minus)
      while (pos_ < s_.size() && is_ws(s_[pos_])) line_ += s_[pos_++] == '\n';
    for (size_t q = s_.find("{%", pos_); q != std::string::npos; q = s_.find("{%", q + 2)) {
      size_t r = q + 2;
      bool lminus = r < s_.size() && s_[r] == '-';
      if (r < s_.size() && (s_[r] == '-' || s_[r] == '+')) ++r;
      r = skip_ws(r);
      if (s_.compare(r, 6, "endraw") != 0) continue;
      size_t e = skip_ws(r + 6);
      bool eminus = s_.compare(e, 3, "-%}") == 0;
      if (!eminus && s_.compare(e, 2, "%}") != 0) continue;
      std::string_view body(s_.data() + pos_, q - pos_);
      if (lminus) {
        size_t n = body.size();
        while (n > 0 && is_ws(body[n - 1])) --n;
        line_ += count_newlines(body.substr(n));
        body = body.substr(0, n);
      }
      push_text(body);
      line_ += count_newlines(std::string_view(s_).substr(q, e - q));
      pos_ = e + (eminus ? 3 : 2);
      after_end(eminus, true);
      return true;
    }
    lex_error(start, "Missing end of raw directive");
  }

  void lex_comment() {
    int start = line_;
    size_t e = s_.find("#}", pos_);
    if (e == std::string::npos) lex_error(start, "Missing end of comment tag");
    bool minus = e > pos_ && s_[e - 1] == '-';
    bool plus = e > pos_ && s_[e - 1] == '+';
    line_ += count_newlines(std::string_view(s_).substr(pos_, e - pos_));
    pos_ = e + 2;
    if (!plus) after_end(minus, true);
  }

  void lex_tag(bool var) {
    int start = line_;
    out_.push_back(Token{var ? Tok::kVarBegin : Tok::kBlockBegin, "", 0, 0, line_});
    for (;;) {
      while (pos_ < s_.size() && is_ws(s_[pos_])) line_ += s_[pos_++] == '\n';
      if (pos_ >= s_.size()) lex_error(start, var ? "unexpected end of template, expected '}}'" : "unexpected end of template, expected '%}'");
      std::string_view rest(s_.data() + pos_, s_.size() - pos_);
      const char* end = var ? "}}" : "%}";
      if (rest.starts_with(end) || ((rest[0] == '-' || (!var && rest[0] == '+')) && rest.substr(1).starts_with(end))) {
        bool minus = rest[0] == '-', plus = rest[0] == '+';
        pos_ += (minus || plus) ? 3 : 2;
        out_.push_back(Token{var ? Tok::kVarEnd : Tok::kBlockEnd, "", 0, 0, line_});
        if (!plus) after_end(minus, !var);
        return;
      }
      char c = rest[0];
      if (is_name_start(c)) {
        size_t n = 1;
        while (n < rest.size() && (is_name_start(rest[n]) || is_digit(rest[n]))) ++n;
        out_.push_back(Token{Tok::kName, std::string(rest.substr(0, n)), 0, 0, line_});
        pos_ += n;
      } else if (is_digit(c)) {
        size_t n = 0;
        std::string digits;
        auto take_digits = [&] {
          while (n < rest.size() && (is_digit(rest[n]) || (rest[n] == '_' && n + 1 < rest.size() && is_digit(rest[n + 1])))) {
            if (rest[n] != '_') digits.push_back(rest[n]);
            ++n;
          }
        };
        take_digits();
        bool is_float = false;
        if (n + 1 < rest.size() && rest[n] == '.' && is_digit(rest[n + 1])) {
          is_float = true;
          digits.push_back('.');
          ++n;
          take_digits();
        }
        if (n < rest.size() && (rest[n] == 'e' || rest[n] == 'E')) {
          size_t m = n + 1;
          if (m < rest.size() && (rest[m] == '+' || rest[m] == '-')) ++m;
          if (m < rest.size() && is_digit(rest[m])) {
            is_float = true;
            digits.append(rest.substr(n, m - n));
            n = m;
            take_digits();
          }
        }
        Token t{is_float ? Tok::kFloat : Tok::kInt, digits, 0, 0, line_};
        try {
          if (is_float)
            t.fval = std::stod(digits);
          else
            t.ival = std::stoll(digits);
        } catch (const std::exception&) {
          lex_error(line_, "number literal out of range: " + digits);
        }
        out_.push_back(std::move(t));
        pos_ += n;
      } else if (c == '\'' || c == '"') {
        size_t n = 1;
        while (n < rest.size() && rest[n] != c) n += rest[n] == '\\' ? 2 : 1;
        if (n >= rest.size()) lex_error(line_, "unexpected end of string literal");
        std::string body(rest.substr(1, n - 1));
        out_.push_back(Token{Tok::kString, decode_escapes(body, line_), 0, 0, line_});
        line_ += count_newlines(body);
        pos_ += n + 1;
      } else {
        const char* op = nullptr;
        for (const char* o : kOps)
          if (rest.starts_with(o)) {
            op = o;
            break;
          }
        if (!op) lex_error(line_, std::string("unexpected char '") + c + "'");
        out_.push_back(Token{Tok::kOp, op, 0, 0, line_});
        pos_ += std::strlen(op);
      }
    }
  }

  std::string s_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> lex(std::string_view source) {
  std::string s;
  s.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      s.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      s.push_back(source[i]);
    }
  }
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return Lexer(std::move(s)).run();
}

}  // namespace ninfer::jinja
