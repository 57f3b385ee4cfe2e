// Owns the Oniguruma -> PCRE2 pattern rewrite and the PCRE2 find-all loop of the Split pre-tokenizer.
#include "engine/tokenizer/regex_split.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "engine/core/error.h"
#include "engine/tokenizer/unicode.h"

namespace ninfer {
namespace {

// Oniguruma's \s: the Unicode White_Space property, as the body of a character class.
constexpr std::string_view kWhiteSpace =
    R"(\x{9}-\x{D}\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

[[noreturn]] void refuse(std::string_view where, std::string_view what, std::string_view pattern) {
  fail(ErrorKind::kUnsupported, "tokenizer.json: {} regex uses {}, which is not supported (pattern '{}')", where, what,
       pattern);
}

// Appends \p{name} / \P{name} (`negated`), with HF's additions to a general category.
void append_property(std::string_view name, bool negated, bool in_class, std::string& out, std::string_view where,
                     std::string_view pattern) {
  const CategoryAdditions add = hf_category_additions(name);
  const std::string plain = fmt::format("\\{}{{{}}}", negated ? 'P' : 'p', name);
  if (add.known && !add.expressible)
    refuse(where, plain + " (HF's Unicode data moved code points out of this category; PCRE2's has them)", pattern);
  if (add.ranges.empty()) {
    out += plain;
  } else if (!negated) {
    const std::string body = fmt::format("\\p{{{}}}{}", name, add.ranges);
    out += in_class ? body : "[" + body + "]";
  } else {
    if (in_class) refuse(where, plain + " inside a character class", pattern);
    out += fmt::format("[^\\p{{{}}}{}]", name, add.ranges);
  }
}

// Copies the escape at p[i] ('\\') to `out`; returns the index after it. Handles \p{..} \P{..} \x{..} \o{..} \d.
size_t copy_escape(std::string_view p, size_t i, bool in_class, std::string& out, std::string_view where) {
  if (i + 1 >= p.size()) refuse(where, "a trailing backslash", p);
  char c = p[i + 1];
  if (std::string_view("hHvVwWbBRXKGQE").find(c) != std::string_view::npos)
    refuse(where, std::string("\\") + c + " (its meaning differs between Oniguruma and PCRE2)", p);
  if (c == 'd' || c == 'D') {  // Unicode decimal digits in both engines: \p{Nd}, with HF's additions
    append_property("Nd", c == 'D', in_class, out, where, p);
    return i + 2;
  }
  size_t end = i + 2;
  if ((c == 'p' || c == 'P' || c == 'x' || c == 'o') && end < p.size() && p[end] == '{') {
    size_t close = p.find('}', end);
    if (close == std::string_view::npos) refuse(where, "an unterminated \\" + std::string(1, c) + "{", p);
    if (c == 'p' || c == 'P') {
      std::string_view name = p.substr(end + 1, close - end - 1);
      bool negated = c == 'P';
      if (!name.empty() && name[0] == '^') {
        negated = !negated;
        name.remove_prefix(1);
      }
      append_property(name, negated, in_class, out, where, p);
      return close + 1;
    }
    end = close + 1;
  } else if (c == 'p' || c == 'P') {
    refuse(where, std::string("\\") + c + " without braces", p);
  }
  out.append(p.substr(i, end - i));
  return end;
}

}  // namespace

std::string oniguruma_to_pcre2(std::string_view p, std::string_view where) {
  std::string out;
  out.reserve(p.size() + 64);
  for (size_t i = 0; i < p.size();) {
    char c = p[i];
    if (c == '\\') {
      char e = i + 1 < p.size() ? p[i + 1] : 0;
      if (e == 's' || e == 'S') {
        out += e == 's' ? "[" : "[^";
        out += kWhiteSpace;
        out += "]";
        i += 2;
        continue;
      }
      i = copy_escape(p, i, false, out, where);
      continue;
    }
    if (c == '(' && i + 1 < p.size() && p[i + 1] == '?') {
      size_t j = i + 2;
      while (j < p.size() && std::string_view("imsx-").find(p[j]) != std::string_view::npos) {
        if (p[j] == 'm' || p[j] == 's' || p[j] == 'x') refuse(where, "an inline option other than i", p);
        ++j;
      }
    }
    if (c != '[') {
      out += c;
      ++i;
      continue;
    }
    // A character class: copied with \s expanded in place.
    out += '[';
    ++i;
    if (i < p.size() && p[i] == '^') out += p[i++];
    if (i < p.size() && p[i] == ']') out += p[i++];  // a leading ']' is literal
    for (;;) {
      if (i >= p.size()) refuse(where, "an unterminated character class", p);
      char d = p[i];
      if (d == ']') {
        out += ']';
        ++i;
        break;
      }
      if (d == '\\') {
        char e = i + 1 < p.size() ? p[i + 1] : 0;
        if (e == 's') {
          out += kWhiteSpace;
          i += 2;
        } else if (e == 'S') {
          refuse(where, "\\S inside a character class", p);
        } else {
          i = copy_escape(p, i, true, out, where);
        }
        continue;
      }
      if (d == '[') refuse(where, "a nested or POSIX [:name:] class (its Unicode meaning differs)", p);
      if (d == '&' && i + 1 < p.size() && p[i + 1] == '&') refuse(where, "a && class intersection", p);
      out += d;
      ++i;
    }
  }
  return out;
}

std::string quote_literal(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    unsigned char u = static_cast<unsigned char>(c);
    bool plain = u >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!plain) {
      out += fmt::format("\\x{{{:X}}}", u);
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

// Per-thread match state shared by every pattern: one ovector pair is all split() reads.
struct MatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);
  MatchState() {
    if (!data || !context || !stack) fail(ErrorKind::kOutOfMemory, "PCRE2: cannot allocate match data");
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~MatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  int n = pcre2_get_error_message(code, buf, sizeof buf);
  return n < 0 ? fmt::format("error {}", code) : std::string(reinterpret_cast<const char*>(buf));
}

}  // namespace

RegexSplitter::RegexSplitter(const std::string& pattern, std::string where) : where_(std::move(where)) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  const uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE | PCRE2_MATCH_INVALID_UTF;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &err,
                                   &offset, nullptr);
  if (!code)
    fail(ErrorKind::kUnsupported, "tokenizer.json: {} regex does not compile at offset {}: {} (pattern '{}')", where_,
         offset, pcre2_message(err), pattern);
  code_ = code;
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

RegexSplitter::~RegexSplitter() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void RegexSplitter::split(std::string_view text, std::vector<std::string_view>& out) const {
  thread_local MatchState state;
  const auto* code = static_cast<const pcre2_code*>(code_);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const size_t n = text.size();
  size_t prev = 0, pos = 0;
  while (pos <= n) {
    int rc = jit_ ? pcre2_jit_match(code, subject, n, pos, 0, state.data, state.context)
                  : pcre2_match(code, subject, n, pos, 0, state.data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0)
      fail(ErrorKind::kInternal, "tokenizer: {} regex failed on a {}-byte piece: {}", where_, n, pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(state.data);
    size_t s = ov[0], e = ov[1];
    if (s > prev) out.push_back(text.substr(prev, s - prev));
    prev = e;
    if (e > s) {
      out.push_back(text.substr(s, e - s));
      pos = e;
    } else {
      if (s >= n) break;
      char32_t cp;
      pos = s + static_cast<size_t>(unicode::decode_utf8(text, s, &cp));
    }
  }
  if (prev < n) out.push_back(text.substr(prev));
}

}  // namespace ninfer
