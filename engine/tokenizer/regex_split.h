// Owns the general Split pre-tokenizer: a tokenizer.json regex (Oniguruma syntax, as HF writes it) compiled with
// PCRE2 and run with Oniguruma's find-all semantics.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ninfer {

// Rewrites an Oniguruma (Ruby syntax) pattern into a PCRE2 pattern with the same meaning under PCRE2_UTF | PCRE2_UCP
// | PCRE2_MULTILINE: \s and \S become explicit classes of the Unicode White_Space property (Oniguruma's \s; PCRE2's
// also matches U+180E); a general category \p{X} (and \d, \p{Nd}) gains the code points HF's newer Unicode data adds
// to it (hf_category_additions). Throws ErrorKind::kUnsupported naming `where` for constructs whose meaning differs
// between the engines and that no supported tokenizer uses (\h \v \w \b \R \X \K \G \Q, \S inside a class, nested
// and POSIX classes, && set operations, inline options m/s/x).
std::string oniguruma_to_pcre2(std::string_view pattern, std::string_view where);

// The code points HF tokenizers' regex engine puts in general category `category` ("L", "Lu", "N", "P", ...) beyond
// PCRE2's (older) Unicode data, as PCRE2 class ranges. known: `category` is a general category the table covers;
// expressible: false where HF also moved code points out of it (a regex naming it is refused). Generated:
// regex_class_overrides.cpp (tools/tokenizer/make_regex_class_overrides.py).
struct CategoryAdditions {
  bool known = false;
  bool expressible = false;
  std::string_view ranges;
};
CategoryAdditions hf_category_additions(std::string_view category);

// A PCRE2 pattern matching `literal` exactly (tokenizer.json Split pattern {"String": ...}).
std::string quote_literal(std::string_view literal);

// One compiled pattern; split() is const and thread-safe (per-thread match data).
class RegexSplitter {
 public:
  // `pcre2_pattern` from oniguruma_to_pcre2() or quote_literal(); `where` names the field in errors.
  RegexSplitter(const std::string& pcre2_pattern, std::string where);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // Split behavior Isolated: appends the matches and the non-empty text between them, in order, covering `text`.
  // Empty matches only mark split points; after one the search resumes one character later (Oniguruma's
  // find-all). Bytes that are not valid UTF-8 never match (PCRE2_MATCH_INVALID_UTF): they stay in the gaps.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

  bool jit() const { return jit_; }

 private:
  void* code_ = nullptr;  // pcre2_code_8
  bool jit_ = false;
  std::string where_;
};

}  // namespace ninfer
