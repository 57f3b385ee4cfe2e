// Owns the Qwen3.5 split scanner: the regex alternatives tried in order at each position, with the regex
// engine's greedy/backtracking outcome computed directly.
#include "engine/tokenizer/pretokenizer.h"

#include "engine/tokenizer/unicode.h"

namespace ninfer {
namespace {

using unicode::kLetter;
using unicode::kMark;
using unicode::kNumber;
using unicode::kSpace;

struct Char {
  char32_t cp;
  uint8_t len;  // 0 at the end of the text
  uint8_t cls;
};

class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}

  Char at(size_t i) const {
    if (i >= s_.size()) return {0, 0, 0};
    unsigned char b = static_cast<unsigned char>(s_[i]);
    if (b < 0x80) return {b, 1, ascii_class(b)};
    char32_t cp;
    int n = unicode::decode_utf8(s_, i, &cp);
    return {cp, static_cast<uint8_t>(n), cp == unicode::kInvalid ? uint8_t{0} : unicode::char_class(cp)};
  }

  // End of the run of characters from `i` whose class intersects `mask` (or, with `invert`, does not).
  size_t run(size_t i, uint8_t mask, bool invert) const {
    while (i < s_.size()) {
      Char c = at(i);
      bool in = (c.cls & mask) != 0;
      if (in == invert) break;
      i += c.len;
    }
    return i;
  }

  size_t run_crlf(size_t i) const {
    while (i < s_.size() && (s_[i] == '\r' || s_[i] == '\n')) ++i;
    return i;
  }

  // Length of the match at `i` (> 0 for i < size).
  size_t match(size_t i) const {
    const Char c = at(i);
    // 1. contractions, case-insensitive ('ſ' U+017F folds to 's')
    if (c.cp == '\'') {
      const Char c1 = at(i + 1);
      char32_t l1 = fold(c1.cp);
      if (l1 == 's' || l1 == 't' || l1 == 'm' || l1 == 'd') return 1 + c1.len;
      if (l1 == 'r' || l1 == 'v' || l1 == 'l') {
        const Char c2 = at(i + 1 + c1.len);
        char32_t l2 = fold(c2.cp);
        if ((l1 == 'l' && l2 == 'l') || (l1 != 'l' && l2 == 'e')) return 1 + c1.len + c2.len;
      }
    }
    // 2. [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+
    if (c.cls & kLetter) return run(i, kLetter | kMark, false) - i;
    if (c.cp != '\r' && c.cp != '\n' && !(c.cls & kNumber)) {
      const Char c1 = at(i + c.len);
      if (c1.len && (c1.cls & (kLetter | kMark))) return run(i + c.len, kLetter | kMark, false) - i;
      if (c.cls & kMark) return run(i, kLetter | kMark, false) - i;
    }
    // 3. \p{N}
    if (c.cls & kNumber) return c.len;
    // 4.  ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*
    constexpr uint8_t kNotPunct = kSpace | kLetter | kMark | kNumber;
    if (c.cp == ' ') {
      const Char c1 = at(i + 1);
      if (c1.len && !(c1.cls & kNotPunct)) return run_crlf(run(i + 1, kNotPunct, true)) - i;
    } else if (!(c.cls & kNotPunct)) {
      return run_crlf(run(i, kNotPunct, true)) - i;
    }
    // Only whitespace is left here. 5. \s*[\r\n]+ : up to the last CR/LF of the whitespace run.
    size_t end = i, last_nl = SIZE_MAX, last_start = i;
    while (end < s_.size()) {
      const Char w = at(end);
      if (!(w.cls & kSpace)) break;
      if (w.cp == '\r' || w.cp == '\n') last_nl = end;
      last_start = end;
      end += w.len;
    }
    if (last_nl != SIZE_MAX) return last_nl + 1 - i;
    // 6. \s+(?!\S) : all of it at the end of the text, else all but the last whitespace character
    if (end == s_.size() || last_start == i) return end - i;  // (7. \s+ for a single character)
    return last_start - i;
  }

 private:
  static char32_t fold(char32_t cp) {
    if (cp >= 'A' && cp <= 'Z') return cp + 32;
    if (cp == 0x017F) return 's';
    return cp;
  }

  static uint8_t ascii_class(unsigned char b) {
    static const auto table = [] {
      struct T {
        uint8_t v[128];
      } t{};
      for (int x = 0; x < 128; ++x) t.v[x] = unicode::char_class(static_cast<char32_t>(x));
      return t;
    }();
    return table.v[b];
  }

  std::string_view s_;
};

}  // namespace

void pretokenize_qwen35(std::string_view text, std::vector<std::string_view>& out) {
  Scanner sc(text);
  for (size_t i = 0; i < text.size();) {
    size_t n = sc.match(i);
    out.push_back(text.substr(i, n));
    i += n;
  }
}

}  // namespace ninfer
