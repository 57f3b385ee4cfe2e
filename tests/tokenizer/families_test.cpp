// Tests the tokenizer on the tokenizer.json shapes of other families (GPT-2, Llama-3, Qwen2, DeepSeek-V3, Tekken,
// o200k, a Digits Sequence) against HF tokenizers goldens, the PCRE2 Split semantics, and the refusal of unsupported
// fields.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/error.h"
#include "engine/tokenizer/regex_split.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/tokenizer/fixtures.h"

namespace ninfer {
namespace {

using nlohmann::json;

const char* const kFamilies[] = {"gpt2", "llama3", "qwen2", "deepseek_v3", "tekken", "gpt4o", "digits"};

std::string family_json(const std::string& family) {
  return test::read_file(test::fixture_path("families/" + family + "/tokenizer.json"));
}

std::vector<std::string> read_corpus(const std::string& path) {
  std::vector<std::string> out;
  for (const json& j : test::read_jsonl(path)) out.push_back(j.get<std::string>());
  return out;
}

const std::vector<std::string>& corpus() {
  static const std::vector<std::string> strings = read_corpus(test::fixture_path("families/corpus.jsonl"));
  return strings;
}

std::string show(const std::string& s) { return json(s).dump(-1, ' ', true, json::error_handler_t::replace); }

// Checks encode, encode_with_special and decode of every string against the HF records of goldens.jsonl
// (make_family_goldens.py: p, s when it differs from p, d when it differs from the text).
void expect_goldens(const std::string& name, const std::string& tokenizer_json, const std::vector<std::string>& texts,
                    const std::string& goldens_path) {
  Tokenizer tok = Tokenizer::from_json(tokenizer_json);
  auto goldens = test::read_jsonl(goldens_path);
  ASSERT_EQ(goldens.size(), texts.size()) << name;
  ASSERT_GE(texts.size(), 5000u) << name;
  size_t plain_bad = 0, special_bad = 0, decode_bad = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string& text = texts[i];
    const json& g = goldens[i];
    auto want = g["p"].get<std::vector<int32_t>>();
    auto got = tok.encode(text);
    if (got != want && ++plain_bad <= 5)
      ADD_FAILURE() << name << " encode mismatch on " << show(text) << "\n got " << json(got).dump() << "\nwant "
                    << json(want).dump();
    auto want_s = g.contains("s") ? g["s"].get<std::vector<int32_t>>() : want;
    if (tok.encode_with_special(text) != want_s && ++special_bad <= 5)
      ADD_FAILURE() << name << " encode_with_special mismatch on " << show(text);
    const std::string want_d = g.contains("d") ? g["d"].get<std::string>() : text;
    std::string got_d = tok.decode(want);
    if (got_d != want_d && ++decode_bad <= 5)
      ADD_FAILURE() << name << " decode mismatch on " << show(text) << "\n got " << show(got_d) << "\nwant "
                    << show(want_d);
  }
  EXPECT_EQ(plain_bad, 0u) << name;
  EXPECT_EQ(special_bad, 0u) << name;
  EXPECT_EQ(decode_bad, 0u) << name;
}

class FamilyGoldens : public ::testing::TestWithParam<const char*> {};

TEST_P(FamilyGoldens, EncodeAndDecodeMatchHf) {
  const std::string family = GetParam();
  expect_goldens(family, family_json(family), corpus(),
                 test::fixture_path("families/" + family + "/goldens.jsonl"));
}

// Full-size real tokenizers (tools/tokenizer/make_real_goldens.py writes them; too large to commit).
TEST(RealTokenizers, EncodeAndDecodeMatchHf) {
  const char* dir = std::getenv("NINFER_REAL_TOKENIZER_GOLDENS");
  if (!dir || !*dir) GTEST_SKIP() << "NINFER_REAL_TOKENIZER_GOLDENS is not set (make_real_goldens.py)";
  const std::string root = dir;
  const std::vector<std::string> texts = read_corpus(root + "/corpus.jsonl");
  std::istringstream names(test::read_file(root + "/names.txt"));
  size_t checked = 0;
  for (std::string name; std::getline(names, name);) {
    if (name.empty()) continue;
    expect_goldens(name, test::read_file(root + "/" + name + "/tokenizer.json"), texts,
                   root + "/" + name + "/goldens.jsonl");
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyGoldens, ::testing::ValuesIn(kFamilies),
                         [](const auto& info) { return std::string(info.param); });

TEST(FamilyTokenizer, InvalidUtf8IsTokenizedNotRefused) {
  for (const char* family : kFamilies) {
    Tokenizer tok = Tokenizer::from_json(family_json(family));
    const std::string text = "ok\xFF\xFE! 12\xC3 x\xE2\x82";
    std::vector<int32_t> ids = tok.encode(text);
    std::string bytes;
    for (int32_t id : ids) bytes += tok.token_bytes(id);
    // digits' ByteLevel add_prefix_space puts a space before every piece that lacks one
    if (std::string(family) != "digits") {
      EXPECT_EQ(bytes, text) << family;
    } else {
      EXPECT_NE(bytes.find("\xFF\xFE"), std::string::npos) << family;
    }
  }
}

TEST(FamilyTokenizer, ConcurrentEncodeIsConsistent) {
  // PCRE2 match data and the pre-tokenizer's piece storage are per thread; four threads must agree with one.
  for (const char* family : {"llama3", "digits"}) {
    Tokenizer tok = Tokenizer::from_json(family_json(family));
    const auto& texts = corpus();
    std::vector<std::vector<int32_t>> want;
    for (size_t i = 0; i < texts.size(); i += 4) want.push_back(tok.encode(texts[i]));
    std::vector<size_t> bad(4, 0);
    std::vector<std::thread> threads;
    for (size_t k = 0; k < bad.size(); ++k)
      threads.emplace_back([&, k] {
        for (size_t j = 0; j < want.size(); ++j) {
          size_t i = (j + k * 97) % want.size();
          if (tok.encode(texts[i * 4]) != want[i]) ++bad[k];
        }
      });
    for (auto& t : threads) t.join();
    for (size_t k = 0; k < bad.size(); ++k) EXPECT_EQ(bad[k], 0u) << family << " thread " << k;
  }
}

// Expects from_json to throw `kind` with a message that contains every one of `needles`.
void expect_refused(const json& doc, ErrorKind kind, std::vector<std::string> needles) {
  try {
    Tokenizer::from_json(doc.dump());
    ADD_FAILURE() << "expected an error containing " << needles[0];
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(FamilyTokenizer, RefusesUnsupportedFieldsNamingThem) {
  const json base = json::parse(family_json("llama3"));
  auto with = [&](auto edit) {
    json d = base;
    edit(d);
    return d;
  };
  expect_refused(with([](json& d) { d["model"]["type"] = "WordPiece"; }), ErrorKind::kUnsupported,
                 {"model.type", "WordPiece"});
  expect_refused(with([](json& d) {
                   d["pre_tokenizer"]["pretokenizers"][0] = {{"type", "Metaspace"}, {"replacement", "_"}};
                 }),
                 ErrorKind::kUnsupported, {"pre_tokenizer.pretokenizers[0].type", "Metaspace"});
  expect_refused(with([](json& d) { d["pre_tokenizer"] = {{"type", "Metaspace"}}; }), ErrorKind::kUnsupported,
                 {"pre_tokenizer.type", "Metaspace"});
  expect_refused(with([](json& d) { d["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "MergedWithNext"; }),
                 ErrorKind::kUnsupported, {"pre_tokenizer.pretokenizers[0].behavior", "MergedWithNext"});
  expect_refused(with([](json& d) { d["pre_tokenizer"]["pretokenizers"][0]["invert"] = true; }),
                 ErrorKind::kUnsupported, {"pre_tokenizer.pretokenizers[0].invert"});
  expect_refused(with([](json& d) { d["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+|\\s"; }),
                 ErrorKind::kUnsupported, {"pre_tokenizer.pretokenizers[0].pattern.Regex", "\\w"});
  expect_refused(with([](json& d) { d["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "a(b"; }),
                 ErrorKind::kUnsupported, {"pre_tokenizer.pretokenizers[0].pattern.Regex", "does not compile"});
  expect_refused(with([](json& d) {
                   auto& seq = d["pre_tokenizer"]["pretokenizers"];
                   std::swap(seq[0], seq[1]);
                 }),
                 ErrorKind::kUnsupported, {"pre_tokenizer.pretokenizers[0]", "ByteLevel"});
  expect_refused(with([](json& d) { d["normalizer"] = {{"type", "NFKC"}}; }), ErrorKind::kUnsupported,
                 {"normalizer.type", "NFKC"});
  expect_refused(with([](json& d) {
                   d["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Lowercase"}}}}};
                 }),
                 ErrorKind::kUnsupported, {"normalizer.normalizers[1].type", "Lowercase"});
  expect_refused(with([](json& d) { d["decoder"] = {{"type", "Metaspace"}}; }), ErrorKind::kUnsupported,
                 {"decoder.type", "Metaspace"});
  expect_refused(with([](json& d) { d["post_processor"]["processors"][1] = {{"type", "RobertaProcessing"}}; }),
                 ErrorKind::kUnsupported, {"post_processor.processors[1].type", "RobertaProcessing"});
  expect_refused(with([](json& d) { d["model"]["byte_fallback"] = true; }), ErrorKind::kUnsupported,
                 {"model.byte_fallback"});
  expect_refused(with([](json& d) { d["pre_tokenizer"]["pretokenizers"][1].erase("add_prefix_space"); }),
                 ErrorKind::kCorrupt, {"pre_tokenizer.pretokenizers[1]", "add_prefix_space"});
  expect_refused(with([](json& d) { d["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"Glob", "*"}}; }),
                 ErrorKind::kCorrupt, {"pre_tokenizer.pretokenizers[0].pattern"});
}

std::vector<std::string> split_with(std::string_view oniguruma, std::string_view text) {
  RegexSplitter re(oniguruma_to_pcre2(oniguruma, "test"), "test");
  std::vector<std::string_view> v;
  re.split(text, v);
  return std::vector<std::string>(v.begin(), v.end());
}

TEST(RegexSplit, OnigurumaSemantics) {
  using V = std::vector<std::string>;
  // empty matches only split (HF: "abxxc" with x* -> a, b, xx, c)
  EXPECT_EQ(split_with("x*", "abxxc"), (V{"a", "b", "xx", "c"}));
  // \s is White_Space: U+0085 is, U+180E and U+200B are not
  EXPECT_EQ(split_with("\\s", "a\xE1\xA0\x8E" "b\xC2\x85" "c\xE2\x80\x8B" "d"),
            (V{"a\xE1\xA0\x8E" "b", "\xC2\x85", "c\xE2\x80\x8B" "d"}));
  EXPECT_EQ(split_with("[^\\s\\p{L}]+", "ab\xE1\xA0\x8E!c"), (V{"ab", "\xE1\xA0\x8E!", "c"}));
  // $ and ^ are line anchors (Ruby syntax)
  EXPECT_EQ(split_with("^a", "ab\nab"), (V{"a", "b\n", "a", "b"}));
  EXPECT_EQ(split_with("\\s+$", "ab  \ncd  "), (V{"ab", "  ", "\ncd", "  "}));
  // case-insensitive group folds U+017F to s
  EXPECT_EQ(split_with("(?i:'s)", "it'\xC5\xBF it'S"), (V{"it", "'\xC5\xBF", " it", "'S"}));
  // invalid UTF-8 never matches and never crashes; it stays between matches
  EXPECT_EQ(split_with("\\p{L}+", "ab\xFF\xC3z\xE2\x82"), (V{"ab", "\xFF\xC3", "z", "\xE2\x82"}));
  EXPECT_EQ(split_with(".", std::string("\xF0\x9F\x98\x80\x80", 5)), (V{"\xF0\x9F\x98\x80", "\x80"}));
  // \p{L} includes what HF's newer Unicode data adds (U+31350, CJK Extension H; U+A7CB); \P{L} excludes it
  EXPECT_EQ(split_with("\\p{L}+", "a\xF0\xB1\x8D\x90\xEA\x9F\x8B!"), (V{"a\xF0\xB1\x8D\x90\xEA\x9F\x8B", "!"}));
  EXPECT_EQ(split_with("[^\\p{L}]+", "!\xF0\xB1\x8D\x90?"), (V{"!", "\xF0\xB1\x8D\x90", "?"}));
  EXPECT_EQ(split_with("\\P{L}+", "!\xF0\xB1\x8D\x90?"), (V{"!", "\xF0\xB1\x8D\x90", "?"}));
  // \d is \p{Nd} with HF's additions (U+10D40, a Garay digit of Unicode 16)
  EXPECT_EQ(split_with("\\d+", "a1\xF0\x90\xB5\x80" "2b"), (V{"a", "1\xF0\x90\xB5\x80" "2", "b"}));
  EXPECT_EQ(quote_literal("a.b"), "a\\x{2E}b");
  EXPECT_EQ(split_with("x", ""), V{});
}

TEST(RegexSplit, RefusesConstructsThatDifferBetweenEngines) {
  for (const char* p : {"\\h", "\\w+", "\\bx", "[\\S]", "[a[b]]", "[a-z&&[^x]]", "(?m:.)", "\\Qx\\E", "\\p{Mn}",
                        "[\\P{L}x]", "\\pL", "[[:alpha:]]"}) {
    try {
      oniguruma_to_pcre2(p, "where");
      ADD_FAILURE() << "expected a refusal of " << p;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << p;
      EXPECT_NE(std::string(e.what()).find("where"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ninfer
