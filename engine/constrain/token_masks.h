// Owns turning grammar states into token masks: the vocabulary sorted by bytes, and per grammar position the tokens
// it accepts on its own and the few whose answer depends on the rest of the stack (computed once, then cached).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/constrain/grammar_matcher.h"
#include "engine/tokenizer/tokenizer.h"

namespace ninfer::constrain {

// A bitset over token ids.
struct TokenBits {
  std::vector<uint64_t> words;
  explicit TokenBits(size_t n = 0) : words((n + 63) / 64, 0) {}
  void set(int32_t id) { words[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); }
  bool test(int32_t id) const { return (words[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; }
  void merge(const TokenBits& o) { for (size_t i = 0; i < words.size(); ++i) words[i] |= o.words[i]; }
  size_t count() const;
};

// The tokens a grammar may produce (by their bytes), sorted so that tokens sharing a prefix are adjacent.
// Tokens that are not eligible (added/control tokens, empty tokens, ids the model never outputs) are left out:
// no grammar state allows them.
class TokenVocabulary {
 public:
  // bytes[id]: the token's bytes; eligible[id]: whether the grammar may produce it.
  TokenVocabulary(std::vector<std::string> bytes, const std::vector<bool>& eligible);
  // A tokenizer's tokens: every token with bytes, added ones by their content (<tool_call>, <think>); special
  // (control) tokens such as <|im_end|> are not eligible, nor ids that `output_ids` (the engine's, when not empty)
  // rules out.
  static std::shared_ptr<const TokenVocabulary> from_tokenizer(const Tokenizer& tokenizer,
                                                               const std::vector<bool>& output_ids = {});

  size_t size() const { return bytes_.size(); }  // one past the largest id
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  bool eligible(int32_t id) const { return id >= 0 && static_cast<size_t>(id) < eligible_.size() && eligible_[static_cast<size_t>(id)]; }
  const std::vector<int32_t>& sorted() const { return sorted_; }
  // lcp()[i]: the length of the common prefix of sorted()[i-1] and sorted()[i] (0 for i = 0).
  const std::vector<uint32_t>& lcp() const { return lcp_; }
  size_t longest() const { return longest_; }  // the most bytes of one eligible token

 private:
  std::vector<std::string> bytes_;
  std::vector<bool> eligible_;
  std::vector<int32_t> sorted_;
  std::vector<uint32_t> lcp_;
  size_t longest_ = 0;
};

// What one stack suffix (the top frames of a stack) accepts, for every eligible token: `accepted` tokens are consumed
// entirely inside those frames (valid whatever lies below); `dependent` tokens finish the frames and go on, so the
// rest of the stack decides them at run time.
struct SuffixMask {
  TokenBits accepted;
  std::vector<int32_t> dependent;
};

// Masks for one grammar over one vocabulary. Thread-safe.
//
// Two caches. The mask of a whole state (every stack) is kept, least recently used dropped: a string being written,
// an array of numbers, return to the same state again and again. A state not seen yet is built from its stacks'
// suffix masks: a suffix of one frame first; when more than kMaxDependent tokens depend on what lies below, that top
// position is keyed by a longer suffix from then on (up to the whole stack, where nothing depends). Suffix masks are
// shared by every state that ends in the same frames (all the string values of a schema share one).
class GrammarMasks {
 public:
  static constexpr size_t kMaxDependent = 2048;
  static constexpr size_t kStateCacheSize = 256;  // 7.8 MB of masks at a 248k vocabulary

  GrammarMasks(const Grammar& grammar, const TokenVocabulary& vocab);

  // The tokens allowed after a prefix whose stacks are `state`, less end-of-output tokens (the caller adds those where
  // the state is complete). Replaces `out`.
  void allowed(const StackSet& state, TokenBits& out);

  const TokenVocabulary& vocab() const { return vocab_; }
  const GrammarMatcher& matcher() const { return matcher_; }
  // For tests and stats: how many suffix masks were computed (full vocabulary walks), and state-cache hits / misses.
  size_t walks() const;
  size_t state_hits() const;
  size_t state_misses() const;

 private:
  SuffixMask compute(std::span<const uint32_t> suffix) const;
  void build(const StackSet& state, TokenBits& out);
  const SuffixMask& suffix_mask(std::span<const uint32_t> stack);

  GrammarMatcher matcher_;
  const TokenVocabulary& vocab_;
  mutable std::mutex mu_;
  std::map<std::vector<uint32_t>, SuffixMask> suffixes_;
  std::unordered_map<uint32_t, size_t> suffix_len_;  // top position -> frames its suffix key spans (default 1)
  struct CachedState {
    TokenBits bits;
    uint64_t used = 0;
  };
  std::map<std::vector<uint32_t>, CachedState> states_;
  uint64_t clock_ = 0;
  size_t hits_ = 0, misses_ = 0;
};

}  // namespace ninfer::constrain
