// Owns the grammar that constrained decoding runs: rules of alternatives over byte sets and rule references,
// built from expressions (literal, byte set, sequence, choice, repetition) and lowered to a flat element array.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ninfer::constrain {

// A set of byte values.
struct ByteSet {
  std::array<uint64_t, 4> bits{};
  static ByteSet of(uint8_t b) { ByteSet s; s.add(b, b); return s; }
  static ByteSet range(uint8_t lo, uint8_t hi) { ByteSet s; s.add(lo, hi); return s; }
  void add(uint8_t lo, uint8_t hi) {
    for (unsigned b = lo; b <= hi; ++b) bits[b >> 6] |= uint64_t{1} << (b & 63);
  }
  void add(const ByteSet& o) { for (size_t i = 0; i < 4; ++i) bits[i] |= o.bits[i]; }
  bool has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  bool operator==(const ByteSet&) const = default;
};

// An expression of the grammar language. Cheap to copy (shared nodes).
class Expr {
 public:
  enum class Kind { kBytes, kRule, kSeq, kChoice, kRepeat };
  static constexpr int32_t kUnbounded = -1;

  static Expr bytes(const ByteSet& set);
  static Expr literal(std::string_view text);         // the bytes of `text`, in order ("" = empty)
  static Expr rule(uint32_t id);                      // a reference to a named rule (recursion)
  static Expr seq(std::vector<Expr> items);
  static Expr choice(std::vector<Expr> options);
  static Expr repeat(Expr item, int32_t min, int32_t max);  // max = kUnbounded for no limit
  static Expr optional(Expr item) { return repeat(std::move(item), 0, 1); }
  static Expr star(Expr item) { return repeat(std::move(item), 0, kUnbounded); }
  static Expr empty() { return seq({}); }

  struct Node;
  const Node& node() const { return *node_; }

 private:
  std::shared_ptr<const Node> node_;
};

struct Expr::Node {
  Kind kind;
  ByteSet set;               // kBytes
  uint32_t rule = 0;         // kRule
  std::vector<Expr> items;   // kSeq, kChoice, kRepeat (one item)
  int32_t min = 0, max = 0;  // kRepeat
};

// One element of a lowered rule alternative.
struct Element {
  enum class Kind : uint8_t { kBytes, kRef, kEnd };
  Kind kind;
  uint32_t arg = 0;  // kBytes: index into Grammar::sets(); kRef: rule id
};

// A repetition lowered to a chain of counted rules (Grammar::flatten): X{min,max} → A_0, with
// A_d := I A_(d+1) (| ε once d ≥ min), A_max := ε, where I is the item's rule and d the items written before the
// one in progress; X{min,} (min ≥ 2) ends in a loop A_min := I A_min | ε. While an item is matched, the frame under
// its rule's frame is counters[d] (the reference to A_(d+1) in A_d), so the count is carried in the stack and
// nowhere else; GrammarMasks derives the masks of every count from one walk (token_masks.h).
struct Repeat {
  uint32_t item = 0;                // the rule of one item
  int32_t min = 0, max = 0;         // max = Expr::kUnbounded: counters.back() is the loop (d ≥ min)
  std::vector<uint32_t> counters;   // counters[d]: the return position under item d's frame
};

// A grammar: named rules, each a choice of alternatives; the root rule is rule 0 unless set. Lowered into one
// element array where every alternative ends with kEnd; a position (index into elements()) is what a matcher
// stack holds. Repetition lowers to right recursion (X* → R := X R | ε), which matchers run without growing; one
// with a maximum of 2 or more, or a minimum of 2 or more and no maximum, to a chain of counted rules (Repeat).
class Grammar {
 public:
  // Declares a rule (for recursion) and returns its id; define it later with define().
  uint32_t declare(std::string name);
  void define(uint32_t rule, const Expr& body);
  uint32_t add(std::string name, const Expr& body) { const uint32_t r = declare(std::move(name)); define(r, body); return r; }
  void set_root(uint32_t rule) { root_ = rule; }

  uint32_t root() const { return root_; }
  const std::vector<Element>& elements() const { return elements_; }
  const std::vector<ByteSet>& sets() const { return sets_; }
  // Positions of the first element of each alternative of `rule`.
  const std::vector<uint32_t>& alternatives(uint32_t rule) const { return rules_[rule].alts; }
  const std::string& rule_name(uint32_t rule) const { return rules_[rule].name; }
  size_t rule_count() const { return rules_.size(); }
  const std::vector<Repeat>& repeats() const { return repeats_; }
  // Throws Error(kInternal) naming a rule that was declared but never defined.
  void check_complete() const;
  // The grammar in a GBNF-like text form, for logs and tests.
  std::string to_string() const;

 private:
  struct Rule {
    std::string name;
    std::vector<uint32_t> alts;
    bool defined = false;
  };
  // Appends one alternative (a flattened sequence) and returns its start position.
  uint32_t emit_alternative(const std::vector<Expr>& items, const std::string& owner);
  void flatten(const Expr& e, std::vector<Element>& out, const std::string& owner);
  uint32_t set_index(const ByteSet& s);
  uint32_t helper_rule(const Expr& body, const std::string& owner);
  uint32_t counted_chain(const Expr& repeat, const std::string& owner);

  std::vector<Rule> rules_;
  std::vector<Element> elements_;
  std::vector<ByteSet> sets_;
  std::vector<Repeat> repeats_;
  // Helper rules (choices, optionals, counted chains) by the expression they lower, held so that the node is not
  // reused: an expression flattened into several rules (a property both first and after a comma) shares its rules.
  std::map<const Expr::Node*, std::pair<Expr, uint32_t>> helpers_;
  template <typename F>
  uint32_t shared_helper(const Expr& e, F&& make);
  uint32_t root_ = 0;
};

}  // namespace ninfer::constrain
