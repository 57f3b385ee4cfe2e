// JSON Schema grammars against an independent validator: every instance in tests/data/constrain/schema_cases.json was
// judged valid or invalid by the `jsonschema` package (tools/constrain/make_schema_cases.py).
#include <gtest/gtest.h>

#include "engine/constrain/grammar_matcher.h"
#include "engine/constrain/json_grammar.h"
#include "engine/core/error.h"
#include "tests/support/test_files.h"

namespace ninfer::constrain {
namespace {

using ojson = nlohmann::ordered_json;

const ojson& cases() {
  static const ojson doc = ojson::parse(ninfer::testing::read_file(std::string(NINFER_TEST_DATA) + "/constrain/schema_cases.json"));
  return doc;
}

bool sentence(const Grammar& g, std::string_view text) { return GrammarMatcher(g).matches(text); }

TEST(JsonGrammar, FixtureCoversFiftySchemas) {
  EXPECT_GE(cases()["cases"].size(), 50u);
  EXPECT_GE(cases()["refused"].size(), 10u);
}

TEST(JsonGrammar, ValidInstancesAreSentencesAndInvalidOnesAreNot) {
  for (const ojson& c : cases()["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const Grammar g = JsonGrammar::from_schema(c["schema"]);
    for (const ojson& v : c["valid"]) EXPECT_TRUE(sentence(g, v.get<std::string>())) << "valid: " << v.get<std::string>();
    for (const ojson& v : c["invalid"]) EXPECT_FALSE(sentence(g, v.get<std::string>())) << "invalid: " << v.get<std::string>();
    // Valid JSON the grammar does not write by design (key order, free whitespace): see json_grammar.h.
    for (const ojson& v : c["outside"]) EXPECT_FALSE(sentence(g, v.get<std::string>())) << "outside: " << v.get<std::string>();
  }
}

TEST(JsonGrammar, LeadingWhitespaceUpToFourBytes) {
  const Grammar g = JsonGrammar::from_schema(ojson::parse(R"({"type":"integer"})"));
  EXPECT_TRUE(sentence(g, "\n\n1"));
  EXPECT_TRUE(sentence(g, " \t\n 1"));
  EXPECT_FALSE(sentence(g, "     1"));
  EXPECT_FALSE(sentence(g, "1 "));
}

TEST(JsonGrammar, RefusedSchemasNameTheKeyword) {
  for (const ojson& c : cases()["refused"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    try {
      JsonGrammar::from_schema(c["schema"]);
      ADD_FAILURE() << "schema accepted: " << c["schema"].dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(c["error_names"].get<std::string>()), std::string::npos) << e.what();
    }
  }
}

// minLength / maxLength count code points (a multi-byte character or an escape is one); one counted chain per bound,
// and the bytes a state still owes to minLength are part of its shortest completion (what keep_in_time counts).
TEST(JsonGrammar, StringLengthsCountCodePointsAndOweTheMinimum) {
  const Grammar g = JsonGrammar::from_schema(ojson::parse(R"({"type":"string","minLength":2,"maxLength":3})"));
  EXPECT_EQ(g.repeats().size(), 2u) << "the leading whitespace's and the string's";
  EXPECT_FALSE(sentence(g, "\"a\""));
  EXPECT_TRUE(sentence(g, "\"ab\""));
  EXPECT_TRUE(sentence(g, "\"\xc3\xa9\xe2\x98\x80\xf0\x9f\x98\x80\"")) << "3 code points in 9 bytes";
  EXPECT_FALSE(sentence(g, "\"\xc3\xa9\xe2\x98\x80\xf0\x9f\x98\x80x\""));
  EXPECT_TRUE(sentence(g, R"("\u00e9\n\"")")) << "escapes count one each";
  EXPECT_FALSE(sentence(g, R"("\u00e9\n\"x")"));
  const GrammarMatcher m(g);
  StackSet s = m.start(), next;
  EXPECT_EQ(m.shortest_completion(s), 4u) << "a quote, two characters, a quote";
  for (char c : std::string("\"\xc3")) {
    ASSERT_TRUE(m.advance(s, static_cast<uint8_t>(c), next));
    std::swap(s, next);
  }
  EXPECT_EQ(m.shortest_completion(s), 3u) << "the rest of the character, one more, the quote";
  const Grammar loose = JsonGrammar::from_schema(ojson::parse(R"({"type":"string","minLength":30})"));
  EXPECT_EQ(GrammarMatcher(loose).shortest_completion(GrammarMatcher(loose).start()), 32u);
  const auto quoted = [](size_t n) { return std::string(1, '"').append(n, 'x').append(1, '"'); };
  EXPECT_TRUE(sentence(loose, quoted(300)));
  EXPECT_FALSE(sentence(loose, quoted(29)));
}

TEST(JsonGrammar, AnyObjectIsJsonWithAnObjectOnTop) {
  const Grammar g = JsonGrammar::any_object();
  EXPECT_TRUE(sentence(g, R"({"a": [1, -2.5e+3, "x\u00e9", {"b": null}], "c": true})"));
  EXPECT_TRUE(sentence(g, "{}"));
  EXPECT_FALSE(sentence(g, "[]"));
  EXPECT_FALSE(sentence(g, R"({"a":})"));
  EXPECT_FALSE(sentence(g, R"({"a":1,})"));
  EXPECT_FALSE(sentence(g, "{\"a\":\"\x01\"}"));
  EXPECT_FALSE(sentence(g, "{\"a\":\"\xc3\"}")) << "a truncated UTF-8 sequence is no string";
  EXPECT_FALSE(sentence(g, "{\"a\":\"\xed\xa0\x80\"}")) << "a UTF-16 surrogate encoded in UTF-8 is no string";
}

}  // namespace
}  // namespace ninfer::constrain
