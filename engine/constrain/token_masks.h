// Owns turning grammar states into token masks: the vocabulary sorted by bytes, and per grammar position the tokens
// it accepts on its own and the few whose answer depends on the rest of the stack (computed once, then cached).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <stop_token>
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

// One walk from a stack suffix whose frames hold a counted repetition's counter (Repeat, grammar.h), for every count
// at once: the walk runs the items without a bound and records, per token, how many items it takes. Items are counted
// from the one in progress (j = 0). `inside`: tokens that end inside the repetition, with the least j they end in;
// `exits`: tokens that can leave it after item j, the rest of their bytes then taken by the key's frames below the
// counter (js[begin, end): accepted), or running past them too (j in [dep_lo, dep_hi]: dependent on the stack below
// the key; a range, so a superset where those j are not contiguous, which the dependent check makes exact).
struct CountedMask {
  static constexpr uint32_t kNone = ~uint32_t{0};
  struct Exit {
    int32_t id;
    uint32_t begin, end;
    uint32_t dep_lo = kNone, dep_hi = 0;
  };
  std::vector<std::pair<uint32_t, int32_t>> inside;  // (least j, token), by j
  std::vector<Exit> exits;                           // in sorted vocabulary order
  std::vector<uint32_t> js;
  uint32_t last = 0;  // the largest j recorded: counts that allow more items than this share one mask
};

// What precompute() did: suffix masks computed (vocabulary walks), keys left to run time (a position whose stack
// suffixes are too many to enumerate), and whether it was stopped before the end.
struct PrecomputeStats {
  size_t walks = 0;
  size_t reach_walks = 0;     // of which in the breadth-first pass over reachable stacks (the first ones)
  size_t prefetch_walks = 0;  // of which asked for by want() (a request's next state)
  size_t positions = 0;    // byte-set positions (possible stack tops)
  size_t left_to_runtime = 0;
  bool stopped = false;
  double seconds = 0;  // the worker's wall time (CompiledGrammar::precompute_async)
};

// Masks for one grammar over one vocabulary. Thread-safe.
//
// Counted repetitions (a string's maxLength / minLength, maxItems, digit runs: Repeat) keep their count in one frame of
// the stack. A key holding such a counter frame is walked once for every count (CountedMask, keyed with the counter
// replaced by its repetition); the suffix mask of each count is derived from that walk without another (a token is
// accepted where the items it takes fit the count, dependent where it may leave the repetition at an item the count
// allows and the key's frames cannot decide the rest).
//
// Two caches. The mask of a whole state (every stack) is kept, least recently used dropped: a string being written,
// an array of numbers, return to the same state again and again. A state not seen yet is built from its stacks'
// suffix masks: a suffix of one frame first; when more than kMaxDependent tokens depend on what lies below, that top
// position is keyed by a longer suffix from then on (up to the whole stack, where nothing depends). Suffix masks are
// shared by every state that ends in the same frames (all the string values of a schema share one).
//
// precompute() makes the suffix masks ahead of time (meant for a worker thread), one walk per precompute_step(), in two
// passes. First the stacks a sentence reaches, breadth-first from the start state, keyed as allowed() keys them: the
// masks a new request needs first are walked first, so that it can start before the rest is done. Then every
// byte-set position's possible stack suffixes, enumerated from the grammar (the return positions of the rules that can
// call its rule), with the same frame doubling as at run time, so that a state seen for the first time only merges
// bitsets and checks its dependent tokens, without a vocabulary walk.
//
// A suffix mask missing when allowed() needs it is walked there, on the caller's thread (the engine's: that step
// waits for it); one the worker is walking at that moment is waited for instead of walked twice. The walks run
// outside the lock, so allowed() and the worker never wait for each other's walks of different suffixes. want()
// queues the masks a state will need for the worker to walk before anything else: a request's next state, asked for
// as its token is accepted, is then walked while the model computes the next step. ready() says whether a state still
// needs a walk (the engine passes over a request whose state does, while others run).
class GrammarMasks {
 public:
  static constexpr size_t kMaxDependent = 2048;
  static constexpr size_t kMaxSuffixFrames = 16;     // precompute() keys no position by more frames than this
  static constexpr size_t kMaxSuffixesPerTop = 256;  // nor enumerates more suffixes of one top position
  static constexpr size_t kStateCacheSize = 256;  // 7.8 MB of masks at a 248k vocabulary
  static constexpr size_t kMaxReachStacks = 512;  // the breadth-first pass expands at most this many stacks
  static constexpr size_t kMaxWanted = 64;         // want()'s queue keeps the newest this many stacks

  GrammarMasks(const Grammar& grammar, const TokenVocabulary& vocab);

  // The tokens allowed after a prefix whose stacks are `state`, less end-of-output tokens (the caller adds those where
  // the state is complete). Replaces `out`.
  void allowed(const StackSet& state, TokenBits& out);

  // Computes the suffix masks of every position's possible stack suffixes now (thread-safe against allowed(), which
  // computes what is missing itself): precompute_step() until it returns false. Returns early, with stopped set, once
  // `stop` is requested.
  PrecomputeStats precompute(std::stop_token stop = {});
  // Walks the next missing suffix mask of the two passes (above) and counts it in `st`; returns false once none is
  // left. `cancelled` (optional) is polled during the walk: a cancelled walk is dropped (st.stopped set, false
  // returned). One caller at a time (the grammar's worker); thread-safe against allowed().
  bool precompute_step(PrecomputeStats& st, const std::function<bool()>& cancelled = {});
  // Queues the stacks of `state` whose suffix masks are not all walked, for precompute_step() to walk their masks
  // first (after the passes are over too). Returns whether it queued any; cheap when the state's mask is cached.
  bool want(const StackSet& state);
  bool wanted() const;  // whether want() queued masks precompute_step() has not taken yet
  // Whether allowed(state) needs no vocabulary walk: the state's mask is cached or every suffix mask it needs is
  // walked (it then only merges bitsets and checks dependent tokens). Cheap; thread-safe.
  bool ready(const StackSet& state);

  const TokenVocabulary& vocab() const { return vocab_; }
  const GrammarMatcher& matcher() const { return matcher_; }
  // For tests and stats: how many vocabulary walks were made in all (a counted walk is one; the masks derived from it
  // are none), how many of them inside allowed() (on the caller's thread: not precomputed), how often allowed() waited
  // for the worker's walk of a suffix it needed, and state-cache hits / misses.
  size_t walks() const;
  size_t runtime_walks() const;
  size_t runtime_waits() const;
  size_t state_hits() const;
  size_t state_misses() const;

 private:
  // The walk; nullopt when `cancelled` said so first.
  std::optional<SuffixMask> compute(std::span<const uint32_t> suffix,
                                    const std::function<bool()>& cancelled = {}) const;
  // The walk of a key whose frame `at` is a counted repetition's (replaced by kCounted | its index).
  std::optional<CountedMask> compute_counted(std::span<const uint32_t> key, size_t at,
                                             const std::function<bool()>& cancelled) const;
  // The suffix mask of the tokens that may take items up to j = last and leave the repetition after items first_out ..
  // last (the count's bounds, clamped to what the walk recorded: counts far from their bounds share a mask).
  SuffixMask derive(const CountedMask& cm, uint64_t last, uint64_t first_out) const;
  // The index of the topmost counter frame of `key`, or -1.
  std::ptrdiff_t counter_at(std::span<const uint32_t> key) const;
  // The key a walk of `key` is made and shared under: the counter frame (if any) replaced by its repetition.
  std::vector<uint32_t> walk_key(const std::vector<uint32_t>& key) const;
  // The suffix mask of `key`, derived now from its counted walk where that is done; null when a walk is needed.
  // mu_ held.
  const SuffixMask* find_mask(const std::vector<uint32_t>& key);
  void build(const StackSet& state, TokenBits& out, std::unique_lock<std::mutex>& lock);
  // The suffix mask allowed() uses for `stack` and the frames of its key, or (mask null) the first key it needs that
  // is not walked yet. A top position keyed too short is keyed by more frames from then on. mu_ held.
  struct Lookup {
    const SuffixMask* mask = nullptr;
    size_t frames = 0;
    std::vector<uint32_t> missing;
  };
  Lookup lookup(std::span<const uint32_t> stack);
  // Calls f(stack) for each stack of `state` whose suffix masks are not all walked (none when the state's mask is
  // cached). mu_ held.
  template <typename F>
  void for_each_unwalked(const StackSet& state, F&& f);
  // Walks `key` with mu_ released meanwhile, unless it is walked already; waits instead while another thread walks it.
  // Returns whether this call walked it (false also when cancelled).
  bool walk(const std::vector<uint32_t>& key, std::unique_lock<std::mutex>& lock,
            const std::function<bool()>& cancelled = {});
  std::pair<const SuffixMask*, size_t> suffix_mask(std::span<const uint32_t> stack, std::unique_lock<std::mutex>& lock);
  // The two passes of precompute_step(): each walks at most one suffix mask; false once the pass is over.
  bool reach_step(PrecomputeStats& st, const std::function<bool()>& cancelled);
  bool enumerate_step(PrecomputeStats& st, const std::function<bool()>& cancelled);
  // Sets in `out` the tokens of `ids` (in sorted vocabulary order) whose bytes `from` accepts; tokens sharing a
  // prefix share the matcher's work on it.
  void check_sorted(const StackSet& from, const std::vector<int32_t>& ids, TokenBits& out) const;
  // The stack suffixes of `frames` frames (or whole stacks of fewer) that can have byte-set position `top` on top.
  std::vector<std::vector<uint32_t>> suffixes_of(uint32_t top, size_t frames, size_t limit) const;
  void index_grammar();

  GrammarMatcher matcher_;
  const TokenVocabulary& vocab_;
  mutable std::mutex mu_;
  std::map<std::vector<uint32_t>, std::shared_ptr<const SuffixMask>> suffixes_;  // never changed once in
  struct Counted {
    CountedMask walk;
    std::map<std::pair<uint64_t, uint64_t>, std::shared_ptr<const SuffixMask>> derived;  // by (last, first_out)
  };
  std::map<std::vector<uint32_t>, Counted> counted_;  // by walk_key()
  static constexpr uint32_t kCounted = 0x80000000u;      // walk_key()'s counter frame: kCounted | repetition
  std::vector<int32_t> counter_rep_;    // per position: the repetition whose counter it is, or -1
  std::vector<uint32_t> counter_done_;  // per counter position: the items written before the one in progress
  size_t walks_ = 0;                    // vocabulary walks, counted or not (derived masks are none)
  std::unordered_map<uint32_t, size_t> suffix_len_;  // top position -> frames its suffix key spans (default 1)
  struct CachedState {
    TokenBits bits;
    uint64_t used = 0;
  };
  std::map<std::vector<uint32_t>, CachedState> states_;
  std::set<std::vector<uint32_t>> walking_;  // keys being walked (mu_ released); walked_ is notified as each ends
  std::deque<std::vector<uint32_t>> wanted_;  // want()'s stacks whose masks are not all walked, oldest first
  std::condition_variable walked_;
  uint64_t clock_ = 0;
  size_t hits_ = 0, misses_ = 0, runtime_walks_ = 0, runtime_waits_ = 0;
  // precompute_step()'s place (its caller's only, no lock): the breadth-first pass's queue of stacks and those seen,
  // then the enumeration's position, frames, keys and next key.
  struct Cursor {
    bool reach_started = false, reach_done = false;
    std::deque<std::vector<uint32_t>> queue;
    std::set<std::vector<uint32_t>> seen;
    size_t expanded = 0;
    uint32_t top = 0;
    size_t frames = 1;
    std::vector<std::vector<uint32_t>> keys;
    size_t next = 0;
    bool listed = false, deeper = false;
  } cursor_;
  // The grammar's call structure, for precompute(): per position its rule; per rule the positions a frame of it can
  // sit on (return positions of the references that reach it, through tail references too), and whether a frame of
  // it can be a stack's bottom.
  std::vector<uint32_t> rule_of_;
  std::vector<std::vector<uint32_t>> below_;
  std::vector<bool> bottom_;
};

}  // namespace ninfer::constrain
