// The grammar language and its byte matcher: literals, choices, bounded and unbounded repetition, recursion.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "engine/constrain/grammar_matcher.h"
#include "engine/core/error.h"

namespace ninfer::constrain {
namespace {

bool sentence(const Grammar& g, std::string_view text) { return GrammarMatcher(g).matches(text); }

// Whether `text` is a prefix of some sentence.
bool prefix(const Grammar& g, std::string_view text) { return GrammarMatcher(g).accepts(GrammarMatcher(g).start(), text); }

Grammar single(const Expr& e) {
  Grammar g;
  g.set_root(g.add("root", e));
  return g;
}

TEST(Grammar, LiteralAndChoice) {
  const Grammar g = single(Expr::choice({Expr::literal("cat"), Expr::literal("car"), Expr::literal("")}));
  EXPECT_TRUE(sentence(g, "cat"));
  EXPECT_TRUE(sentence(g, "car"));
  EXPECT_TRUE(sentence(g, ""));
  EXPECT_FALSE(sentence(g, "ca"));
  EXPECT_TRUE(prefix(g, "ca"));
  EXPECT_FALSE(prefix(g, "cab"));
  EXPECT_FALSE(sentence(g, "cats"));
}

TEST(Grammar, BoundedRepetition) {
  const Grammar g = single(Expr::repeat(Expr::literal("ab"), 2, 4));
  EXPECT_FALSE(sentence(g, "ab"));
  EXPECT_TRUE(sentence(g, "abab"));
  EXPECT_TRUE(sentence(g, "ababab"));
  EXPECT_TRUE(sentence(g, "abababab"));
  EXPECT_FALSE(sentence(g, "ababababab"));
  EXPECT_FALSE(prefix(g, "ababababa"));
}

// Bounded repetitions of a rule, at the edges of their ranges (min 0, min = max, min > 0 with no max).
TEST(Grammar, CountedRepetitionsAcceptExactlyTheirRange) {
  for (const auto& [min, max] : std::vector<std::pair<int32_t, int32_t>>{{0, 2}, {0, 5}, {3, 3}, {2, 6}, {2, Expr::kUnbounded},
                                                                         {5, Expr::kUnbounded}}) {
    SCOPED_TRACE(testing::Message() << min << ".." << max);
    Grammar g;
    const uint32_t ab = g.add("ab", Expr::choice({Expr::literal("ab"), Expr::literal("c")}));
    g.set_root(g.add("root", Expr::seq({Expr::literal("<"), Expr::repeat(Expr::rule(ab), min, max), Expr::literal(">")})));
    ASSERT_EQ(g.repeats().size(), 1u) << "lowered as one counted chain";
    EXPECT_EQ(g.repeats()[0].item, ab);
    EXPECT_EQ(g.repeats()[0].counters.size(), static_cast<size_t>(max == Expr::kUnbounded ? min + 1 : max));
    for (int32_t n = 0; n <= 9; ++n) {
      std::string text = "<";
      for (int32_t i = 0; i < n; ++i) text += i % 2 ? "c" : "ab";
      const bool in = n >= min && (max == Expr::kUnbounded || n <= max);
      EXPECT_EQ(sentence(g, text + ">"), in) << text;
      EXPECT_EQ(prefix(g, text), max == Expr::kUnbounded || n <= max) << text;
    }
  }
}

// The count lives in one frame: a long bounded repetition does not grow the stacks, and each stack names its count.
TEST(Grammar, CountedRepetitionKeepsTheStackFlatAndOwesItsMinimum) {
  const Grammar g = single(Expr::seq({Expr::literal("\""), Expr::repeat(Expr::bytes(ByteSet::range('a', 'z')), 4, 200),
                                      Expr::literal("\"")}));
  GrammarMatcher m(g);
  StackSet s = m.start(), next;
  EXPECT_EQ(m.shortest_completion(s), 6u) << "the quote, four letters owed, the quote";
  const auto& counters = g.repeats().at(0).counters;
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(m.advance(s, i == 0 ? '"' : 'q', next)) << i;
    std::swap(s, next);
    size_t deepest = 0;
    s.for_each([&](std::span<const uint32_t> st) { deepest = std::max(deepest, st.size()); });
    EXPECT_LE(deepest, 3u) << i;
    // After the quote and i letters: item i is open (counter i), or the string may close (i >= 4).
    bool counted = false;
    s.for_each([&](std::span<const uint32_t> st) {
      for (uint32_t p : st) counted = counted || p == counters[static_cast<size_t>(i)];
    });
    EXPECT_TRUE(counted) << i;
    EXPECT_EQ(m.shortest_completion(s), static_cast<uint32_t>(1 + std::max(0, 4 - i))) << i;
  }
  EXPECT_TRUE(m.accepts(s, "q\""));
  EXPECT_FALSE(m.accepts(s, "qq")) << "201 letters";
}

TEST(Grammar, AnExpressionFlattenedTwiceSharesItsRules) {
  const Expr rep = Expr::repeat(Expr::literal("x"), 0, 8);
  Grammar g;
  const uint32_t a = g.add("a", Expr::seq({Expr::literal("a"), rep}));
  const uint32_t b = g.add("b", Expr::seq({Expr::literal("b"), rep}));
  g.set_root(g.add("root", Expr::choice({Expr::rule(a), Expr::rule(b)})));
  EXPECT_EQ(g.repeats().size(), 1u);
  EXPECT_TRUE(sentence(g, "axxxxxxxx"));
  EXPECT_TRUE(sentence(g, "b"));
  EXPECT_FALSE(sentence(g, "bxxxxxxxxx"));
  // So do an optional, a choice and a loop: the second rule using them adds only itself.
  const Expr opt = Expr::optional(Expr::literal("y"));
  const Expr ch = Expr::choice({Expr::literal("p"), Expr::literal("q")});
  const Expr loop = Expr::star(Expr::literal("z"));
  Grammar h;
  h.add("a", Expr::seq({opt, ch, loop}));
  const size_t rules = h.rule_count();
  h.set_root(h.add("b", Expr::seq({Expr::literal("<"), opt, ch, loop})));
  EXPECT_EQ(h.rule_count(), rules + 1);
  EXPECT_TRUE(sentence(h, "<ypzz"));
  EXPECT_TRUE(sentence(h, "<q"));
}

TEST(Grammar, UnboundedRepetitionKeepsTheStackFlat) {
  const Grammar g = single(Expr::seq({Expr::literal("<"), Expr::star(Expr::bytes(ByteSet::range('a', 'z'))), Expr::literal(">")}));
  GrammarMatcher m(g);
  StackSet s = m.start(), next;
  for (char c : std::string("<") + std::string(10000, 'q')) {
    ASSERT_TRUE(m.advance(s, static_cast<uint8_t>(c), next));
    std::swap(s, next);
  }
  size_t deepest = 0;
  s.for_each([&](std::span<const uint32_t> st) { deepest = std::max(deepest, st.size()); });
  EXPECT_LE(deepest, 3u) << "a loop must not grow the stack";
  ASSERT_TRUE(m.advance(s, '>', next));
  EXPECT_TRUE(next.complete());
}

TEST(Grammar, RecursionBalancesBrackets) {
  Grammar g;
  const uint32_t r = g.declare("balanced");
  g.define(r, Expr::star(Expr::seq({Expr::literal("("), Expr::rule(r), Expr::literal(")")})));
  g.set_root(r);
  g.check_complete();
  EXPECT_TRUE(sentence(g, "(()())()"));
  EXPECT_TRUE(sentence(g, ""));
  EXPECT_FALSE(sentence(g, "(()"));
  EXPECT_FALSE(prefix(g, "())"));
}

TEST(Grammar, AmbiguityIsKeptAsSeveralStacks) {
  // "a" then optional "a": after one "a" the grammar is both complete and able to go on.
  const Grammar g = single(Expr::seq({Expr::literal("a"), Expr::optional(Expr::literal("ab")), Expr::optional(Expr::literal("a"))}));
  GrammarMatcher m(g);
  StackSet s = m.start(), next;
  ASSERT_TRUE(m.advance(s, 'a', next));
  EXPECT_TRUE(next.complete());
  EXPECT_TRUE(next.can_continue());
  EXPECT_GE(next.count(), 2u);
  EXPECT_TRUE(sentence(g, "aab"));
  EXPECT_TRUE(sentence(g, "aaba"));
  EXPECT_TRUE(sentence(g, "aa"));
  EXPECT_FALSE(sentence(g, "aaa"));
}

TEST(Grammar, LeftRecursionIsRefusedWithAnError) {
  Grammar g;
  const uint32_t r = g.declare("left");
  g.define(r, Expr::choice({Expr::seq({Expr::rule(r), Expr::literal("x")}), Expr::literal("y")}));
  g.set_root(r);
  try {
    GrammarMatcher(g).start();
    FAIL() << "left recursion must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("left recursion"), std::string::npos) << e.what();
  }
}

TEST(Grammar, UndefinedRulesAreCaught) {
  Grammar g;
  g.declare("missing");
  EXPECT_THROW(g.check_complete(), Error);
}

TEST(Grammar, PrintsAsText) {
  const Grammar g = single(Expr::seq({Expr::literal("a"), Expr::bytes(ByteSet::range('0', '9'))}));
  EXPECT_EQ(g.to_string(), "*root ::= [a] [0-9]\n");
}

}  // namespace
}  // namespace ninfer::constrain
