// Ending in time against brute force: CompletionCosts (one sorted vocabulary walk per state, kept for states met again)
// gives every allowed token the shortest completion that advancing its bytes one by one gives, and a constraint with
// an output limit allows exactly the tokens the rule "shortest completion after it ≤ tokens left − 2" keeps, at every
// step of random walks that run into the limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "engine/constrain/completion_costs.h"
#include "engine/constrain/grammar_constraint.h"
#include "engine/constrain/json_grammar.h"

namespace ninfer::constrain {
namespace {

using ojson = nlohmann::ordered_json;

constexpr int32_t kEnd = 0;

// JSON pieces and split UTF-8, many tokens of several pieces (so tokens share prefixes and span structure).
std::shared_ptr<TokenVocabulary> vocab() {
  std::mt19937 rng(99);
  const std::vector<std::string> pieces = {"{", "}", "[", "]", "\"", ":", ",", " ", "\\", "u", "0", "1", "9", "-", ".",
                                           "e", "true", "false", "null", "name", "a", "\xc3", "\xa9", "\xe2\x98\x80"};
  std::vector<std::string> bytes{"<end>"};
  std::vector<bool> eligible{false};
  for (int b = 1; b < 128; ++b) bytes.emplace_back(1, static_cast<char>(b)), eligible.push_back(true);
  for (int i = 0; i < 3000; ++i) {
    std::string t;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 6); k < n; ++k) t += pieces[rng() % pieces.size()];
    bytes.push_back(t), eligible.push_back(true);
  }
  return std::make_shared<TokenVocabulary>(bytes, eligible);
}

std::vector<std::shared_ptr<CompiledGrammar>> grammars(const std::shared_ptr<TokenVocabulary>& v) {
  std::vector<std::shared_ptr<CompiledGrammar>> out;
  for (const char* s : {R"({"type":"object","properties":{"name":{"type":"string"},"n":{"type":"array","items":{"type":"integer"}}},"required":["name","n"]})",
                        R"({"type":"object","properties":{"b":{"type":"string","minLength":2,"maxLength":5},"c":{"type":"boolean"}},"required":["b","c"]})"})
    out.push_back(std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(ojson::parse(s)), v));
  out.push_back(std::make_shared<CompiledGrammar>(JsonGrammar::any_object(), v));
  return out;
}

// The shortest completion after `id`'s bytes from `state`, byte by byte.
uint32_t cost_after(const GrammarMatcher& m, const TokenVocabulary& v, StackSet state, int32_t id) {
  StackSet next;
  for (char c : v.bytes(id)) {
    if (!m.advance(state, static_cast<uint8_t>(c), next)) return GrammarMatcher::kUnreachable;
    std::swap(state, next);
  }
  return m.shortest_completion(state);
}

TEST(CompletionCosts, EveryAllowedTokensCostIsTheByteByByteShortestCompletion) {
  const auto v = vocab();
  std::mt19937 rng(5);
  for (const auto& g : grammars(v)) {
    const GrammarMatcher& m = g->masks().matcher();
    CompletionCosts costs(m, *v);
    StackSet state = m.start(), next;
    for (int step = 0; step < 40 && state.can_continue(); ++step) {
      TokenBits allowed(v->size());
      g->masks().allowed(state, allowed);
      const auto got = costs.of(state, allowed);
      std::vector<std::pair<uint32_t, int32_t>> want;
      for (size_t id = 0; id < v->size(); ++id)
        if (allowed.test(static_cast<int32_t>(id)))
          want.emplace_back(cost_after(m, *v, state, static_cast<int32_t>(id)), static_cast<int32_t>(id));
      std::sort(want.begin(), want.end());
      ASSERT_EQ(got->by_cost, want) << "step " << step;
      const size_t walks = costs.walks();
      EXPECT_EQ(costs.of(state, allowed), got) << "a state asked again is kept, not walked again";
      EXPECT_EQ(costs.walks(), walks);
      const auto& [cost, pick] = want[rng() % want.size()];
      for (char c : v->bytes(pick)) {
        ASSERT_TRUE(m.advance(state, static_cast<uint8_t>(c), next));
        std::swap(state, next);
      }
    }
  }
}

// The rule keep_in_time() implements, from brute force: near the limit, the mask's tokens whose shortest completion fits
// the tokens left less the end token's (or, when none fits, the ones that come closest).
TokenBits reference_allowed(const CompiledGrammar& g, const StackSet& state, int64_t left) {
  const GrammarMatcher& m = const_cast<CompiledGrammar&>(g).masks().matcher();
  const TokenVocabulary& v = g.vocab();
  TokenBits mask(v.size()), out(v.size());
  const_cast<CompiledGrammar&>(g).masks().allowed(state, mask);
  if (left <= 1 && state.complete()) {
    out.set(kEnd);
    return out;
  }
  const int64_t now = m.shortest_completion(state);
  const bool check = left - 2 < now + completion_window(const_cast<CompiledGrammar&>(g));
  int64_t best = state.complete() ? 0 : GrammarMatcher::kUnreachable;
  std::vector<std::pair<int32_t, uint32_t>> after;
  for (size_t id = 0; id < v.size(); ++id)
    if (mask.test(static_cast<int32_t>(id))) {
      after.emplace_back(static_cast<int32_t>(id), cost_after(m, v, state, static_cast<int32_t>(id)));
      best = std::min<int64_t>(best, after.back().second);
    }
  const int64_t fits = std::max<int64_t>(left - 2, best);
  for (const auto& [id, cost] : after)
    if (!check || static_cast<int64_t>(cost) <= fits) out.set(id);
  if (state.complete()) out.set(kEnd);
  return out;
}

TEST(CompletionCosts, AConstraintNearItsLimitAllowsWhatBruteForceKeeps) {
  const auto v = vocab();
  for (const auto& g : grammars(v))
    for (int64_t limit : {6, 12, 30}) {
      std::mt19937 rng(static_cast<uint32_t>(limit));
      for (int walk = 0; walk < 3; ++walk) {
        GrammarConstraint c(g, {{kEnd}, std::nullopt});
        c.start(limit);
        const GrammarMatcher& m = g->masks().matcher();
        StackSet state = m.start(), next;
        for (int64_t produced = 0; produced < limit; ++produced) {
          const TokenBits got = c.allowed();
          ASSERT_EQ(got.words, reference_allowed(*g, state, limit - produced).words)
              << "limit " << limit << " walk " << walk << " token " << produced;
          std::vector<int32_t> ids;
          for (size_t id = 0; id < v->size(); ++id)
            if (got.test(static_cast<int32_t>(id))) ids.push_back(static_cast<int32_t>(id));
          ASSERT_FALSE(ids.empty());
          const int32_t pick = ids[rng() % ids.size()];
          c.accept(pick);
          if (pick == kEnd) break;
          for (char ch : v->bytes(pick)) {
            ASSERT_TRUE(m.advance(state, static_cast<uint8_t>(ch), next));
            std::swap(state, next);
          }
        }
      }
    }
}

}  // namespace
}  // namespace ninfer::constrain
