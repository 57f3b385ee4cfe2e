// Owns incremental (streaming) detokenization that never emits a broken UTF-8 character.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "engine/tokenizer/tokenizer.h"

namespace ninfer {

// Turns a stream of token ids into text pieces. A character whose bytes span several tokens is emitted once its
// last byte arrives; bytes that can no longer form a valid character become U+FFFD exactly where HF's
// decode() of the whole sequence puts them, so the concatenation of every push() plus finish() equals
// Tokenizer::decode(all ids, skip_special). At most 3 bytes are ever held back.
class Detokenizer {
 public:
  explicit Detokenizer(const Tokenizer& tokenizer, bool skip_special = false)
      : tokenizer_(tokenizer), skip_special_(skip_special) {}

  // Adds one token; returns the text that became final (possibly empty).
  std::string push(int32_t id);
  // Adds several tokens; returns the text that became final.
  std::string push(std::span<const int32_t> ids);
  // Ends the stream: a held incomplete sequence becomes U+FFFD. The detokenizer can be reused afterwards.
  std::string finish();

  // Bytes held back waiting for the rest of a character.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  void add(int32_t id);
  std::string take();

  Tokenizer tokenizer_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace ninfer
