// The grammar language and its byte matcher: literals, choices, bounded and unbounded repetition, recursion.
#include <gtest/gtest.h>

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
