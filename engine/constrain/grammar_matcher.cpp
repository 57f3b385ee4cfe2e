#include "engine/constrain/grammar_matcher.h"

#include <algorithm>

#include "engine/core/error.h"

namespace ninfer::constrain {

bool StackSet::complete() const {
  bool found = false;
  for_each([&](std::span<const uint32_t> s) { found = found || s.empty(); });
  return found;
}

bool StackSet::can_continue() const {
  bool found = false;
  for_each([&](std::span<const uint32_t> s) { found = found || !s.empty(); });
  return found;
}

size_t StackSet::count() const {
  size_t n = 0;
  for_each([&](std::span<const uint32_t>) { ++n; });
  return n;
}

GrammarMatcher::GrammarMatcher(const Grammar& grammar) : g_(grammar) {
  // The shortest sentence of every rule (a fixpoint over the alternatives), then per position the shortest rest of
  // its alternative.
  const auto& el = g_.elements();
  std::vector<uint32_t> shortest(g_.rule_count(), kUnreachable);
  auto cost = [&](const Element& e) -> uint64_t { return e.kind == Element::Kind::kBytes ? 1 : shortest[e.arg]; };
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t r = 0; r < g_.rule_count(); ++r)
      for (uint32_t alt : g_.alternatives(r)) {
        uint64_t n = 0;
        for (uint32_t p = alt; el[p].kind != Element::Kind::kEnd && n < kUnreachable; ++p) n += cost(el[p]);
        if (n < shortest[r]) shortest[r] = static_cast<uint32_t>(n), changed = true;
      }
  }
  rest_.assign(el.size(), 0);
  for (size_t p = el.size(); p-- > 0;)
    if (el[p].kind != Element::Kind::kEnd)
      rest_[p] = static_cast<uint32_t>(std::min<uint64_t>(cost(el[p]) + rest_[p + 1], kUnreachable));
  for (uint32_t r : rest_)
    if (r != kUnreachable) largest_rest_ = std::max(largest_rest_, r);
  shortest_ = std::move(shortest);
}

uint32_t GrammarMatcher::shortest_completion(const StackSet& state) const {
  uint64_t best = kUnreachable;
  state.for_each([&](std::span<const uint32_t> stack) {
    uint64_t n = 0;
    for (uint32_t p : stack) n += rest_[p];
    best = std::min(best, n);
  });
  return static_cast<uint32_t>(std::min<uint64_t>(best, kUnreachable));
}

void GrammarMatcher::add(const std::vector<uint32_t>& stack, StackSet& out) const {
  size_t count = 0;
  for (size_t i = 0; i < out.data.size();) {
    const uint32_t n = out.data[i];
    if (n == stack.size() && std::equal(stack.begin(), stack.end(), out.data.begin() + static_cast<std::ptrdiff_t>(i) + 1))
      return;  // already there
    i += 1 + n;
    ++count;
  }
  if (count >= kMaxStacks)
    fail(ErrorKind::kInvalidArgument,
         "the output grammar is too ambiguous: more than {} parses of one prefix (simplify the schema)", kMaxStacks);
  out.data.push_back(static_cast<uint32_t>(stack.size()));
  out.data.insert(out.data.end(), stack.begin(), stack.end());
}

void GrammarMatcher::closure(std::vector<uint32_t>& stack, StackSet& out, int depth) const {
  if (depth > kMaxDepth)
    fail(ErrorKind::kInvalidArgument,
         "the output grammar nests deeper than {} rules without producing a byte (left recursion?)", kMaxDepth);
  if (stack.empty()) {
    add(stack, out);
    return;
  }
  const uint32_t p = stack.back();
  const Element& el = g_.elements()[p];
  if (el.kind == Element::Kind::kBytes) {
    add(stack, out);
    return;
  }
  // A rule reference: replace it by what follows it in its alternative (if anything), then by each alternative.
  stack.pop_back();
  const bool has_next = g_.elements()[p + 1].kind != Element::Kind::kEnd;
  if (has_next) stack.push_back(p + 1);
  for (uint32_t alt : g_.alternatives(el.arg)) {
    if (g_.elements()[alt].kind == Element::Kind::kEnd) {  // the empty alternative
      closure(stack, out, depth + 1);
    } else {
      stack.push_back(alt);
      closure(stack, out, depth + 1);
      stack.pop_back();
    }
  }
  if (has_next) stack.pop_back();
  stack.push_back(p);
}

void GrammarMatcher::expand(std::span<const uint32_t> stack, StackSet& out) const {
  thread_local std::vector<uint32_t> s;
  s.assign(stack.begin(), stack.end());
  closure(s, out, 0);
}

void GrammarMatcher::expand_rule(uint32_t rule, StackSet& out) const {
  std::vector<uint32_t> stack;
  for (uint32_t alt : g_.alternatives(rule)) {
    stack.clear();
    if (g_.elements()[alt].kind != Element::Kind::kEnd) stack.push_back(alt);
    closure(stack, out, 0);
  }
}

StackSet GrammarMatcher::start() const {
  StackSet out;
  expand_rule(g_.root(), out);
  return out;
}

bool GrammarMatcher::advance(const StackSet& in, uint8_t byte, StackSet& out) const {
  out.clear();
  thread_local std::vector<uint32_t> stack;
  in.for_each([&](std::span<const uint32_t> s) {
    if (s.empty()) return;
    const uint32_t p = s.back();
    if (!g_.sets()[g_.elements()[p].arg].has(byte)) return;
    stack.assign(s.begin(), s.end() - 1);
    if (g_.elements()[p + 1].kind != Element::Kind::kEnd) stack.push_back(p + 1);
    closure(stack, out, 0);
  });
  return !out.dead();
}

bool GrammarMatcher::accepts(const StackSet& in, std::string_view bytes) const {
  if (bytes.empty()) return true;
  thread_local StackSet a, b;  // reused: this runs for every context-dependent token of a mask
  if (!advance(in, static_cast<uint8_t>(bytes[0]), a)) return false;
  for (size_t i = 1; i < bytes.size(); ++i) {
    if (!advance(a, static_cast<uint8_t>(bytes[i]), b)) return false;
    std::swap(a, b);
  }
  return true;
}

bool GrammarMatcher::matches(std::string_view text) const {
  StackSet a = start(), b;
  for (char c : text) {
    if (!advance(a, static_cast<uint8_t>(c), b)) return false;
    std::swap(a, b);
  }
  return a.complete();
}

}  // namespace ninfer::constrain
