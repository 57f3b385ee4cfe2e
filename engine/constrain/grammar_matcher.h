// Owns running a Grammar over bytes: the set of parse stacks a prefix can be in, advanced one byte at a time.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "engine/constrain/grammar.h"

namespace ninfer::constrain {

// The parse stacks of one prefix, flat: for each stack its length n, then n positions bottom first. A position is
// an index into Grammar::elements(); the top of every stack is a byte-set element. The empty stack (n = 0) means
// the grammar is complete at this point. No stacks at all: the prefix is not in the language.
struct StackSet {
  std::vector<uint32_t> data;

  bool dead() const { return data.empty(); }
  bool complete() const;      // one of the stacks is empty
  bool can_continue() const;  // one of the stacks is not empty
  size_t count() const;
  void clear() { data.clear(); }
  // Calls f(std::span<const uint32_t> stack) for every stack.
  template <typename F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < data.size();) {
      const uint32_t n = data[i];
      f(std::span<const uint32_t>(data.data() + i + 1, n));
      i += 1 + n;
    }
  }
};

// Stateless over a Grammar (which must outlive it): computes the stacks after a byte. Nondeterminism is kept as
// several stacks, deduplicated; a grammar that needs more than kMaxStacks at once, or expands rules deeper than
// kMaxDepth without consuming a byte (left recursion), is refused with Error(kInvalidArgument).
class GrammarMatcher {
 public:
  static constexpr size_t kMaxStacks = 512;
  static constexpr int kMaxDepth = 256;

  static constexpr uint32_t kUnreachable = ~uint32_t{0};

  explicit GrammarMatcher(const Grammar& grammar);

  // The stacks before any byte: the root rule's alternatives, expanded.
  StackSet start() const;
  // out = the stacks after `byte` from `in` (out is cleared first). Returns !out.dead().
  bool advance(const StackSet& in, uint8_t byte, StackSet& out) const;
  // Runs `bytes` from `in`; true when all were consumed with some stack left.
  bool accepts(const StackSet& in, std::string_view bytes) const;
  // Whether `text` is a complete sentence of the grammar.
  bool matches(std::string_view text) const;
  // The fewest bytes that complete a sentence from `state` (0 where it is complete; kUnreachable when dead).
  uint32_t shortest_completion(const StackSet& state) const;
  // Adds to `out` (deduplicated) the stacks `stack` expands to: itself when its top is a byte set or it is empty, else
  // its top reference replaced as a byte would (what follows it, and each alternative of the rule, expanded).
  void expand(std::span<const uint32_t> stack, StackSet& out) const;
  // Adds to `out` the stacks of one match of `rule` started on an empty stack (the empty stack: the rule is done).
  void expand_rule(uint32_t rule, StackSet& out) const;
  // The fewest bytes of a sentence of `rule` (kUnreachable when it has none).
  uint32_t shortest(uint32_t rule) const { return shortest_[rule]; }
  // The longest of the shortest remainders of any alternative: about what one choice can add to the bytes still
  // owed (a new element, a second tool call).
  uint32_t largest_remainder() const { return largest_rest_; }

  const Grammar& grammar() const { return g_; }

 private:
  void closure(std::vector<uint32_t>& stack, StackSet& out, int depth) const;
  void add(const std::vector<uint32_t>& stack, StackSet& out) const;

  const Grammar& g_;
  std::vector<uint32_t> shortest_;  // per rule
  std::vector<uint32_t> rest_;  // per position: the fewest bytes from it to the end of its alternative
  uint32_t largest_rest_ = 0;
};

}  // namespace ninfer::constrain
