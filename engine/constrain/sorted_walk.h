// Owns running one grammar state over many tokens in the vocabulary's sorted order: tokens that share a prefix with
// the token before them share the matcher's work on it (the stacks after each byte of the last token are kept).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/constrain/grammar_matcher.h"
#include "engine/constrain/token_masks.h"

namespace ninfer::constrain {

class SortedWalk {
 public:
  // Starts over from `from` (copied). `matcher` and `vocab` must outlive the walk's use until the next start().
  void start(const GrammarMatcher& matcher, const TokenVocabulary& vocab, const StackSet& from) {
    matcher_ = &matcher, vocab_ = &vocab;
    if (after_.empty()) after_.resize(1);
    after_[0] = from;
    prev_ = nullptr;
    good_ = 0;
  }

  // The stacks after token `id`'s bytes from the start state, or nullptr when the grammar refuses them. Correct for
  // ids in any order; the work is shared when they come in TokenVocabulary::sorted() order (any subset of it). The
  // stacks returned are valid until the next call.
  const StackSet* after(int32_t id) {
    const std::string& t = vocab_->bytes(id);
    size_t k = 0;
    if (prev_) {
      const size_t n = std::min({good_, t.size(), prev_->size()});
      while (k < n && (*prev_)[k] == t[k]) ++k;
    }
    if (after_.size() < t.size() + 1) after_.resize(t.size() + 1);
    bool ok = true;
    for (; k < t.size(); ++k)
      if (!matcher_->advance(after_[k], static_cast<uint8_t>(t[k]), after_[k + 1])) {
        ok = false;
        break;
      }
    prev_ = &t;
    good_ = k;  // after_[0..k] hold the stacks after t's first k bytes
    return ok ? &after_[t.size()] : nullptr;
  }

 private:
  const GrammarMatcher* matcher_ = nullptr;
  const TokenVocabulary* vocab_ = nullptr;
  std::vector<StackSet> after_;  // after_[d]: the stacks after the first d bytes of the last token
  const std::string* prev_ = nullptr;
  size_t good_ = 0;
};

}  // namespace ninfer::constrain
