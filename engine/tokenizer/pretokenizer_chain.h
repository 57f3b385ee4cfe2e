// Owns the tokenizer.json pre_tokenizer: parsing its configuration into steps and splitting text with them.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

namespace ninfer {

class RegexSplitter;

// A byte-level pre-tokenizer as HF `tokenizers` runs it: a Sequence of steps, each re-splitting every piece the
// previous steps produced. Supported steps (anything else is refused at load, kUnsupported naming the field):
//   Split     pattern {"Regex": Oniguruma syntax} or {"String": literal}, behavior Isolated, invert false. The
//             Qwen3.5 regex runs on the hand-written scanner (pretokenizer.h), any other on PCRE2 (regex_split.h).
//   Digits    individual_digits true (each \p{N} character alone) or false (runs of them).
//   ByteLevel exactly once, last: add_prefix_space (a space before every piece that does not start with one),
//             use_regex (GPT-2's split regex), trim_offsets (offsets only: ignored).
// Copies share the compiled steps; split() is const and thread-safe.
class PreTokenizer {
 public:
  static PreTokenizer from_json(const nlohmann::json& pre_tokenizer);

  // Appends the pieces of `text` in order. They are views into `text`, except pieces that add_prefix_space
  // extended: those live in per-thread storage valid until this thread's next split().
  void split(std::string_view text, std::vector<std::string_view>& out) const;

  // True when the pre-tokenizer is the Qwen3.5 Split alone (the hand scanner, nothing else).
  bool is_qwen35_scanner() const;

  struct Step;

 private:
  std::shared_ptr<const std::vector<Step>> steps_;
};

}  // namespace ninfer
