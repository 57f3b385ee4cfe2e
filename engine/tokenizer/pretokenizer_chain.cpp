// Owns parsing the pre_tokenizer configuration into steps and applying them piece by piece.
#include "engine/tokenizer/pretokenizer_chain.h"

#include <deque>
#include <string>

#include "engine/core/error.h"
#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/regex_split.h"
#include "engine/tokenizer/tokenizer_json.h"
#include "engine/tokenizer/unicode.h"

namespace ninfer {

using nlohmann::json;
using tokenizer_json::field_type;
using tokenizer_json::flag;

namespace {

// GPT-2's split regex, which HF's ByteLevel pre-tokenizer applies with use_regex=true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace

struct PreTokenizer::Step {
  enum Kind { kQwen35, kRegex, kDigits, kPrefixSpace } kind;
  std::unique_ptr<RegexSplitter> regex;  // kRegex
  bool individual = false;               // kDigits

  void apply(std::string_view piece, std::vector<std::string_view>& out, std::deque<std::string>& store) const {
    switch (kind) {
      case kQwen35:
        pretokenize_qwen35(piece, out);
        return;
      case kRegex:
        regex->split(piece, out);
        return;
      case kDigits:
        split_digits(piece, out);
        return;
      case kPrefixSpace:
        if (!piece.empty() && piece[0] == ' ') {
          out.push_back(piece);
        } else {
          store.push_back(" " + std::string(piece));
          out.push_back(store.back());
        }
        return;
    }
  }

  void split_digits(std::string_view s, std::vector<std::string_view>& out) const {
    size_t start = 0;  // start of the pending piece
    bool in_digits = false;
    for (size_t i = 0; i < s.size();) {
      char32_t cp;
      size_t n = static_cast<size_t>(unicode::decode_utf8(s, i, &cp));
      bool digit = cp != unicode::kInvalid && (unicode::char_class(cp) & unicode::kNumber);
      if (i > start && (digit != in_digits || (digit && individual))) {
        out.push_back(s.substr(start, i - start));
        start = i;
      }
      in_digits = digit;
      i += n;
    }
    if (start < s.size()) out.push_back(s.substr(start));
  }
};

namespace {

using Step = PreTokenizer::Step;

Step regex_step(const std::string& pcre2_pattern, const std::string& where) {
  Step st{Step::kRegex, nullptr, false};
  st.regex = std::make_unique<RegexSplitter>(pcre2_pattern, where);
  return st;
}

void parse_split(const json& j, const std::string& where, std::vector<Step>& steps) {
  std::string behavior = field_type(j, "behavior");
  if (behavior != "Isolated")
    fail(ErrorKind::kUnsupported,
         "tokenizer.json: {}.behavior '{}' is not supported (only Isolated, the behavior of the supported families)",
         where, behavior);
  if (flag(j, "invert", false)) fail(ErrorKind::kUnsupported, "tokenizer.json: {}.invert=true is not supported", where);
  const json pattern = j.value("pattern", json());
  if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
    const std::string re = pattern["Regex"].get<std::string>();
    if (re == kQwen35SplitPattern) {
      steps.push_back(Step{Step::kQwen35, nullptr, false});
      return;
    }
    steps.push_back(regex_step(oniguruma_to_pcre2(re, where + ".pattern.Regex"), where + ".pattern.Regex"));
  } else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
    const std::string lit = pattern["String"].get<std::string>();
    if (lit.empty()) fail(ErrorKind::kUnsupported, "tokenizer.json: {}.pattern.String is empty", where);
    steps.push_back(regex_step(quote_literal(lit), where + ".pattern.String"));
  } else {
    fail(ErrorKind::kCorrupt, "tokenizer.json: {}.pattern is neither {{\"Regex\": ..}} nor {{\"String\": ..}}: {}", where,
         pattern.dump().substr(0, 200));
  }
}

// A boolean HF requires (its serde has no default for it): kCorrupt naming the field when absent.
bool required_flag(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) fail(ErrorKind::kCorrupt, "tokenizer.json: {} has no '{}'", where, key);
  return flag(j, key, false);
}

// Returns true when the step was ByteLevel.
bool parse_step(const json& j, const std::string& where, std::vector<Step>& steps) {
  const std::string type = field_type(j, "type");
  if (type == "Split") {
    parse_split(j, where, steps);
  } else if (type == "Digits") {
    steps.push_back(Step{Step::kDigits, nullptr, required_flag(j, "individual_digits", where)});
  } else if (type == "ByteLevel") {
    if (required_flag(j, "add_prefix_space", where)) steps.push_back(Step{Step::kPrefixSpace, nullptr, false});
    if (flag(j, "use_regex", true)) steps.push_back(regex_step(oniguruma_to_pcre2(kGpt2Pattern, where), where));
    return true;
  } else {
    fail(ErrorKind::kUnsupported,
         "tokenizer.json: {}.type '{}' is not supported (Split, Digits, ByteLevel and Sequence of them are)", where,
         type.empty() ? j.dump().substr(0, 120) : type);
  }
  return false;
}

}  // namespace

PreTokenizer PreTokenizer::from_json(const json& p) {
  std::vector<json> flat;
  std::vector<std::string> names;
  if (field_type(p, "type") == "Sequence") {
    if (!p.contains("pretokenizers") || !p["pretokenizers"].is_array())
      fail(ErrorKind::kCorrupt, "tokenizer.json: pre_tokenizer Sequence has no 'pretokenizers' array");
    for (size_t i = 0; i < p["pretokenizers"].size(); ++i) {
      const json& s = p["pretokenizers"][i];
      if (field_type(s, "type") == "Sequence")
        fail(ErrorKind::kUnsupported, "tokenizer.json: pre_tokenizer.pretokenizers[{}] is a nested Sequence", i);
      flat.push_back(s);
      names.push_back(fmt::format("pre_tokenizer.pretokenizers[{}]", i));
    }
  } else {
    flat.push_back(p);
    names.push_back("pre_tokenizer");
  }
  auto steps = std::make_shared<std::vector<Step>>();
  for (size_t i = 0; i < flat.size(); ++i) {
    bool byte_level = parse_step(flat[i], names[i], *steps);
    if (byte_level != (i + 1 == flat.size()))
      fail(ErrorKind::kUnsupported,
           "tokenizer.json: {}: a byte-level BPE needs exactly one ByteLevel pre-tokenizer, the last one (got "
           "type '{}')",
           names[i], field_type(flat[i], "type"));
  }
  PreTokenizer out;
  out.steps_ = std::move(steps);
  return out;
}

bool PreTokenizer::is_qwen35_scanner() const { return steps_->size() == 1 && (*steps_)[0].kind == Step::kQwen35; }

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  thread_local std::deque<std::string> store;
  thread_local std::vector<std::string_view> cur, next;
  store.clear();
  const std::vector<Step>& steps = *steps_;
  if (steps.empty()) {
    out.push_back(text);
    return;
  }
  if (steps.size() == 1) {
    steps[0].apply(text, out, store);
    return;
  }
  cur.assign(1, text);
  for (size_t k = 0; k < steps.size(); ++k) {
    std::vector<std::string_view>& dst = k + 1 == steps.size() ? out : next;
    if (k + 1 < steps.size()) next.clear();
    for (std::string_view piece : cur) steps[k].apply(piece, dst, store);
    if (k + 1 < steps.size()) cur.swap(next);
  }
}

}  // namespace ninfer
