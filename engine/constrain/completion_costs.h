// Owns what ending in time needs near an output limit: for a grammar state, the shortest completion (in bytes) after
// each token its mask allows, found by one walk over the vocabulary in sorted order and kept for the last few states
// asked about (a string being written returns to the same state token after token).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/constrain/grammar_matcher.h"
#include "engine/constrain/token_masks.h"

namespace ninfer::constrain {

class CompletionCosts {
 public:
  // The allowed tokens of one state with the fewest bytes that complete a sentence after each, cheapest first.
  struct Costs {
    std::vector<std::pair<uint32_t, int32_t>> by_cost;  // (shortest completion after the token, token)
  };
  // States kept: each holds 8 bytes per allowed token (2 MB for a string's state at a 248k vocabulary).
  static constexpr size_t kCachedStates = 2;

  CompletionCosts(const GrammarMatcher& matcher, const TokenVocabulary& vocab) : matcher_(matcher), vocab_(vocab) {}

  // The costs of `allowed` (the mask of `state`, end tokens left out) after `state`. Thread-safe; the walk runs
  // outside the lock.
  std::shared_ptr<const Costs> of(const StackSet& state, const TokenBits& allowed);
  size_t walks() const;  // states walked (not found kept), for tests and stats

 private:
  const GrammarMatcher& matcher_;
  const TokenVocabulary& vocab_;
  mutable std::mutex mu_;
  std::list<std::pair<std::vector<uint32_t>, std::shared_ptr<const Costs>>> kept_;  // most recent first
  size_t walks_ = 0;
};

}  // namespace ninfer::constrain
