// Token masks against brute force: at every step of random constrained walks, the allowed set equals the tokens whose
// bytes the matcher accepts from the current stacks (plus the end tokens where the grammar is complete); on a synthetic
// vocabulary full of JSON pieces and split UTF-8, and on the Qwen3.5 tokenizer's 248k tokens.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <chrono>
#include <random>
#include <thread>

#include "engine/constrain/grammar_constraint.h"
#include "engine/constrain/json_grammar.h"
#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/support/test_files.h"

namespace ninfer::constrain {
namespace {

using ojson = nlohmann::ordered_json;

constexpr int32_t kEnd = 0;  // the synthetic vocabulary's end token (not eligible as text)

std::shared_ptr<TokenVocabulary> synthetic_vocab() {
  std::mt19937 rng(1234);
  const std::vector<std::string> pieces = {"{", "}", "[", "]", "\"", ":", ",", " ", "\n", "\\", "u", "0", "1", "9", "-",
                                           ".", "e", "E", "+", "a", "b", "z", "true", "false", "null", "name", "age",
                                           "\xc3", "\xa9", "\xe2\x98\x80", "\xf0\x9f", "\x98\x80", "\x01", "\t", "x"};
  std::vector<std::string> bytes{"<end>"};
  std::vector<bool> eligible{false};
  for (int b = 0; b < 256; ++b) bytes.emplace_back(1, static_cast<char>(b)), eligible.push_back(true);
  for (int i = 0; i < 4000; ++i) {
    std::string t;
    const int n = 1 + static_cast<int>(rng() % 5);
    for (int k = 0; k < n; ++k) t += pieces[rng() % pieces.size()];
    bytes.push_back(t);
    eligible.push_back(true);
  }
  bytes.emplace_back("<|control|>"), eligible.push_back(false);
  return std::make_shared<TokenVocabulary>(bytes, eligible);
}

// Brute force: the tokens whose bytes continue `state`.
TokenBits brute(const TokenVocabulary& vocab, const GrammarMatcher& m, const StackSet& state, int32_t end_id) {
  TokenBits out(vocab.size());
  for (size_t id = 0; id < vocab.size(); ++id)
    if (vocab.eligible(static_cast<int32_t>(id)) && m.accepts(state, vocab.bytes(static_cast<int32_t>(id))))
      out.set(static_cast<int32_t>(id));
  if (state.complete()) out.set(end_id);
  return out;
}

// Random constrained walks; at each step the constraint's mask must equal brute force. Returns the finished outputs.
const Tokenizer& qwen35();
std::shared_ptr<TokenVocabulary> qwen_vocab();

// fill: prefer tokens without '"' (a string is written up to its maxLength before it closes).
std::vector<std::string> walks(const std::shared_ptr<CompiledGrammar>& cg, int32_t end_id, int count, uint32_t seed,
                               int max_steps, bool fill = false) {
  std::mt19937 rng(seed);
  const GrammarMatcher& m = cg->masks().matcher();
  std::vector<std::string> done;
  for (int w = 0; w < count; ++w) {
    GrammarConstraint c(cg, {{end_id}, std::nullopt});
    StackSet state = m.start(), next;
    std::string text;
    for (int step = 0; step < max_steps; ++step) {
      const TokenBits got = c.allowed();
      const TokenBits want = brute(cg->vocab(), m, state, end_id);
      EXPECT_EQ(got.words, want.words) << "walk " << w << " step " << step << " after " << text;
      if (got.words != want.words) return done;
      std::vector<int32_t> ids;
      for (size_t id = 0; id < cg->vocab().size(); ++id)
        if (got.test(static_cast<int32_t>(id))) ids.push_back(static_cast<int32_t>(id));
      EXPECT_FALSE(ids.empty());
      if (ids.empty()) return done;
      // End as soon as allowed half of the time, else a random allowed token (short tokens first, to nest).
      int32_t pick = ids[rng() % ids.size()];
      if (fill && rng() % 8 != 0) {
        std::vector<int32_t> open;
        for (int32_t id : ids)
          if (id != end_id && cg->vocab().bytes(id).find('"') == std::string::npos) open.push_back(id);
        if (!open.empty()) pick = open[rng() % open.size()];
      }
      if (got.test(end_id) && (rng() % 2 == 0 || step > max_steps / 2)) pick = end_id;
      c.accept(pick);
      if (pick == end_id) {
        done.push_back(text);
        break;
      }
      text += cg->vocab().bytes(pick);
      StackSet s2 = state;
      for (char ch : cg->vocab().bytes(pick)) {
        if (!m.advance(s2, static_cast<uint8_t>(ch), next)) {
          ADD_FAILURE() << "the matcher refuses an allowed token after " << text;
          return done;
        }
        std::swap(s2, next);
      }
      state = s2;
    }
  }
  return done;
}

const char* kSchemas[] = {
    R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"]})",
    R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string","maxLength":3},"c":{"type":"boolean"}},"required":["b"]})",
    R"({"type":"array","items":{"type":"number"},"maxItems":3})",
    R"({"$defs":{"t":{"type":"object","properties":{"v":{"type":"integer"},"k":{"type":"array","items":{"$ref":"#/$defs/t"},"maxItems":2}},"required":["v","k"]}},"$ref":"#/$defs/t"})",
    R"({"enum":["alpha","beta",1,null]})",
    R"({"type":"string","minLength":2,"maxLength":4})",
};

// kSchemas' grammars, then free-form JSON objects'.
std::vector<Grammar> schema_and_object_grammars() {
  std::vector<Grammar> gs;
  for (const char* text : kSchemas) gs.push_back(JsonGrammar::from_schema(ojson::parse(text)));
  gs.push_back(JsonGrammar::any_object());
  return gs;
}

TEST(TokenMasks, SyntheticVocabularyMatchesBruteForce) {
  const auto vocab = synthetic_vocab();
  for (const char* text : kSchemas) {
    SCOPED_TRACE(text);
    auto cg = std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(ojson::parse(text)), vocab);
    const std::vector<std::string> outputs = walks(cg, kEnd, 12, 7, 80);
    for (const std::string& out : outputs) EXPECT_TRUE(nlohmann::json::accept(out)) << "not JSON: " << out;
  }
}

// The same walks over masks precomputed from the grammar alone: every suffix a state meets was enumerated (no walk in
// allowed()), and the masks still equal brute force.
TEST(TokenMasks, PrecomputedSuffixMasksMatchBruteForceWithoutWalksInTheStep) {
  const auto vocab = synthetic_vocab();
  const std::vector<Grammar> gs = schema_and_object_grammars();
  for (size_t i = 0; i < gs.size(); ++i) {
    SCOPED_TRACE(i < std::size(kSchemas) ? kSchemas[i] : "json_object");
    auto cg = std::make_shared<CompiledGrammar>(gs[i], vocab);
    const PrecomputeStats st = cg->masks().precompute();
    EXPECT_FALSE(st.stopped);
    EXPECT_EQ(st.left_to_runtime, 0u);
    EXPECT_GT(st.walks, 0u);
    EXPECT_EQ(cg->masks().walks(), st.walks);
    const std::vector<std::string> outputs = walks(cg, kEnd, 12, 31, 80);
    EXPECT_FALSE(outputs.empty());
    for (const std::string& out : outputs) EXPECT_TRUE(nlohmann::json::accept(out)) << "not JSON: " << out;
    EXPECT_EQ(cg->masks().runtime_walks(), 0u) << "a suffix the precomputation did not enumerate";
  }
}

// A suffix keyed by more than one frame: a tiny vocabulary where every digit run depends on what follows the number,
// so the integer's positions need their callers' frames (kMaxDependent is passed with long digit tokens).
TEST(TokenMasks, PrecomputedDeeperSuffixesMatchBruteForce) {
  std::vector<std::string> bytes{"<end>"};
  std::vector<bool> eligible{false};
  for (int b = 0; b < 256; ++b) bytes.emplace_back(1, static_cast<char>(b)), eligible.push_back(true);
  std::mt19937 rng(5);
  for (size_t i = 0; i < 3 * GrammarMasks::kMaxDependent; ++i) {
    std::string t;
    for (int k = 0, n = 2 + static_cast<int>(rng() % 4); k < n; ++k) t += static_cast<char>('0' + rng() % 10);
    t += ",]}"[rng() % 3];
    bytes.push_back(t), eligible.push_back(true);
  }
  auto vocab = std::make_shared<TokenVocabulary>(bytes, eligible);
  const char* schema = R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}},"b":{"type":"integer"}},"required":["a","b"]})";
  auto lazy = std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(ojson::parse(schema)), vocab);
  auto pre = std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(ojson::parse(schema)), vocab);
  const PrecomputeStats st = pre->masks().precompute();
  EXPECT_EQ(st.left_to_runtime, 0u);
  EXPECT_GT(st.walks, st.positions) << "some positions keyed by more than one frame";
  walks(lazy, kEnd, 10, 3, 60);
  EXPECT_GT(lazy->masks().runtime_walks(), 0u);
  walks(pre, kEnd, 10, 3, 60);
  EXPECT_EQ(pre->masks().runtime_walks(), 0u);
}

// Bounded strings and arrays (counted repetitions: every count's masks derived from one walk) at the edges of their
// ranges: a bound below and above the most characters one synthetic token holds (at most 25; split UTF-8 pieces too),
// min > 0, min = max, a minimum with no maximum, nested in an object and an array. Masks walked as met and precomputed, walks
// that fill strings up to their bound and walks that close them early.
const char* kBoundedSchemas[] = {
    R"({"type":"string","maxLength":2})",
    R"({"type":"string","minLength":3,"maxLength":3})",
    R"({"type":"string","minLength":2,"maxLength":9})",
    R"({"type":"string","minLength":4})",
    R"({"type":"string","maxLength":40})",
    R"({"type":"object","properties":{"a":{"type":"string","maxLength":5},"b":{"type":"array","items":{"type":"string","minLength":1,"maxLength":3},"minItems":1,"maxItems":3}},"required":["a","b"]})",
    R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":4})",
};

// Code points of a UTF-8 string.
size_t code_points(const std::string& s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<uint8_t>(c) & 0xc0) != 0x80; }));
}

TEST(TokenMasks, BoundedStringsMatchBruteForce) {
  const auto vocab = synthetic_vocab();
  size_t longest = 0;
  for (int32_t id : vocab->sorted()) longest = std::max(longest, code_points(vocab->bytes(id)));
  ASSERT_LT(longest, 40u);
  ASSERT_GT(longest, 9u);
  for (const char* text : kBoundedSchemas) {
    SCOPED_TRACE(text);
    const ojson schema = ojson::parse(text);
    const Grammar g = JsonGrammar::from_schema(schema);
    ASSERT_FALSE(g.repeats().empty());
    auto lazy = std::make_shared<CompiledGrammar>(g, vocab);
    auto pre = std::make_shared<CompiledGrammar>(g, vocab);
    const PrecomputeStats st = pre->masks().precompute();
    EXPECT_EQ(st.left_to_runtime, 0u);
    EXPECT_EQ(pre->masks().walks(), st.walks);
    std::vector<std::string> outputs;
    for (bool fill : {true, false})
      for (const auto& cg : {lazy, pre}) {
        const auto out = walks(cg, kEnd, 10, fill ? 41 : 43, 60, fill);
        outputs.insert(outputs.end(), out.begin(), out.end());
      }
    EXPECT_EQ(pre->masks().runtime_walks(), 0u) << "a suffix the precomputation did not enumerate";
    EXPECT_FALSE(outputs.empty());
    if (schema["type"] != "string") continue;
    const size_t min = schema.value("minLength", 0), max = schema.value("maxLength", size_t{1000});
    bool at_max = false;
    for (const std::string& out : outputs) {
      const auto v = nlohmann::json::parse(out, nullptr, false);
      if (v.is_discarded()) continue;  // a lone \u surrogate escape: the grammar's strings allow it, nlohmann does not
      ASSERT_TRUE(v.is_string()) << out;
      const size_t n = code_points(v.get<std::string>());
      EXPECT_GE(n, min) << out;
      EXPECT_LE(n, max) << out;
      at_max = at_max || n == max;
    }
    if (max <= 9) {
      EXPECT_TRUE(at_max) << "no walk wrote a string up to its maxLength";
    }
  }
}

// A bounded string's masks cost the same walks whatever its bound (one counted walk serves every count).
TEST(TokenMasks, ABoundedStringsWalksDoNotGrowWithItsBound) {
  const auto vocab = synthetic_vocab();
  const auto walks_of = [&](const std::string& bound) {
    const std::string text = R"({"type":"object","properties":{"s":{"type":"string")" + bound + R"(}},"required":["s"]})";
    const Grammar g = JsonGrammar::from_schema(ojson::parse(text));
    GrammarMasks masks(g, *vocab);
    return masks.precompute().walks;
  };
  const size_t max3 = walks_of(R"(,"maxLength":3)");
  EXPECT_EQ(walks_of(R"(,"maxLength":12)"), max3);
  EXPECT_EQ(walks_of(R"(,"maxLength":60)"), max3);
  EXPECT_EQ(walks_of(R"(,"minLength":2,"maxLength":60)"), max3);
  const size_t min3 = walks_of(R"(,"minLength":3)");
  EXPECT_EQ(walks_of(R"(,"minLength":30)"), min3);
}

// Counted repetitions beyond JSON: items with several parses of one prefix ("a" | "ab" | "b"), a bounded repetition
// next to one with a minimum and no maximum, one nested in another, and one inside recursion; on a vocabulary of short
// strings over their letters (more than kMaxDependent tokens, so keys grow past the counter). Masks walked as met and
// precomputed against brute force.
TEST(TokenMasks, CountedRepetitionsOfAmbiguousItemsMatchBruteForce) {
  std::vector<std::string> bytes{"<end>"};
  std::vector<bool> eligible{false};
  for (int b = 0; b < 256; ++b) bytes.emplace_back(1, static_cast<char>(b)), eligible.push_back(true);
  std::mt19937 rng(77);
  const std::string letters = "aaabbbcx<>";
  for (size_t i = 0; i < 4 * GrammarMasks::kMaxDependent; ++i) {
    std::string t;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 8); k < n; ++k) t += letters[rng() % letters.size()];
    bytes.push_back(t), eligible.push_back(true);
  }
  auto vocab = std::make_shared<TokenVocabulary>(bytes, eligible);
  const auto lit = [](const char* s) { return Expr::literal(s); };
  std::vector<Grammar> gs;
  {
    Grammar g;  // an ambiguous item, 2..5 times
    g.set_root(g.add("root", Expr::seq({lit("<"), Expr::repeat(Expr::choice({lit("a"), lit("ab"), lit("b")}), 2, 5), lit(">")})));
    gs.push_back(std::move(g));
  }
  {
    Grammar g;  // a bounded repetition, then one with a minimum and no maximum
    g.set_root(g.add("root", Expr::seq({Expr::repeat(Expr::choice({lit("ab"), lit("a")}), 0, 7),
                                        Expr::repeat(lit("c"), 3, Expr::kUnbounded), lit("x")})));
    gs.push_back(std::move(g));
  }
  {
    Grammar g;  // nested: 2..4 groups of 1..3 letters
    const Expr group = Expr::seq({lit("<"), Expr::repeat(Expr::choice({lit("a"), lit("b")}), 1, 3), lit(">")});
    g.set_root(g.add("root", Expr::seq({Expr::repeat(group, 2, 4), lit("x")})));
    gs.push_back(std::move(g));
  }
  {
    Grammar g;  // inside recursion: r := "<" (r | "a" | "bc"){0,3} ">"
    const uint32_t r = g.declare("r");
    g.define(r, Expr::seq({lit("<"), Expr::repeat(Expr::choice({Expr::rule(r), lit("a"), lit("bc")}), 0, 3), lit(">")}));
    g.set_root(r);
    gs.push_back(std::move(g));
  }
  // Prefixes at every count, below and past the minimum, up to the maximum, for the walks to start from.
  const std::vector<std::vector<std::string>> prefixes = {
      {"<", "<a", "<ab", "<abb", "<abba", "<ababa", "<bbbbb"},
      {"", "a", "ab", "abab", "ababab", "abababa", "aaaaaaa", "c", "cc", "ccc", "abcccc"},
      {"<a>", "<ab>", "<a><b", "<ab><b><a", "<a><a><a><a"},
      {"<", "<<", "<a", "<aa", "<aaa", "<<a><bc>", "<<<<"},
  };
  for (size_t i = 0; i < gs.size(); ++i) {
    SCOPED_TRACE(gs[i].to_string());
    ASSERT_FALSE(gs[i].repeats().empty());
    auto lazy = std::make_shared<CompiledGrammar>(gs[i], vocab);
    auto pre = std::make_shared<CompiledGrammar>(gs[i], vocab);
    const PrecomputeStats st = pre->masks().precompute();
    EXPECT_EQ(st.left_to_runtime, 0u);
    const GrammarMatcher& m = pre->masks().matcher();
    for (const std::string& p : prefixes[i]) {
      StackSet state = m.start(), next;
      for (char ch : p) {
        ASSERT_TRUE(m.advance(state, static_cast<uint8_t>(ch), next)) << p;
        std::swap(state, next);
      }
      TokenBits want = brute(*vocab, m, state, kEnd);
      want.words[0] &= ~uint64_t{1};  // allowed() leaves the end token to its caller
      for (const auto& cg : {lazy, pre}) {
        TokenBits got;
        cg->masks().allowed(state, got);
        EXPECT_EQ(got.words, want.words) << "after " << p;
      }
    }
    for (const auto& cg : {lazy, pre}) {
      const auto outputs = walks(cg, kEnd, 16, 5 + static_cast<uint32_t>(i), 40);
      EXPECT_FALSE(outputs.empty());
      for (const std::string& out : outputs) EXPECT_TRUE(cg->masks().matcher().matches(out)) << out;
    }
    EXPECT_EQ(pre->masks().runtime_walks(), 0u) << "a suffix the precomputation did not enumerate";
  }
}

// Whether the workers' last turns end (a grammar says it is done just before its turn ends).
bool turns_end(const MaskWorkers& workers) {
  for (int i = 0; i < 1000 && workers.pending() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return workers.pending() == 0;
}

TEST(TokenMasks, TheWorkerPrecomputesOnce) {
  const auto vocab = synthetic_vocab();
  MaskWorkers workers(1);
  auto cg = std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(ojson::parse(kSchemas[3])), vocab);
  EXPECT_FALSE(cg->precomputing()) << "nothing asked yet";
  cg->precompute_async("test", workers);
  cg->precompute_async("test", workers);  // once
  ASSERT_TRUE(cg->wait_precomputed(std::chrono::seconds(60)));
  EXPECT_GT(cg->precompute_stats().walks, 0u);
  EXPECT_EQ(cg->masks().walks(), cg->precompute_stats().walks);
  EXPECT_FALSE(cg->precompute_stats().stopped);
  EXPECT_TRUE(turns_end(workers));
}

// Masks walked on demand (no precomputation), precomputed in full, and half precomputed with the rest walked by a
// worker while the walks below run: the same at every step, and all equal brute force.
TEST(TokenMasks, MasksWalkedOnDemandEqualPrecomputedMasks) {
  const auto vocab = synthetic_vocab();
  MaskWorkers workers(1);
  const std::vector<Grammar> gs = schema_and_object_grammars();
  for (size_t i = 0; i < gs.size(); ++i) {
    SCOPED_TRACE(i < std::size(kSchemas) ? kSchemas[i] : "json_object");
    auto lazy = std::make_shared<CompiledGrammar>(gs[i], vocab);
    auto full = std::make_shared<CompiledGrammar>(gs[i], vocab);
    auto mixed = std::make_shared<CompiledGrammar>(gs[i], vocab);
    full->masks().precompute();
    PrecomputeStats st;
    for (int k = 0; k < 3 && mixed->masks().precompute_step(st);) ++k;
    mixed->precompute_async("mixed", workers);  // the worker goes on from the start while the walks run
    const auto a = walks(lazy, kEnd, 8, 11 + static_cast<uint32_t>(i), 80);
    const auto b = walks(full, kEnd, 8, 11 + static_cast<uint32_t>(i), 80);
    const auto c = walks(mixed, kEnd, 8, 11 + static_cast<uint32_t>(i), 80);
    EXPECT_EQ(a, b);
    EXPECT_EQ(a, c);
    EXPECT_GT(lazy->masks().runtime_walks(), 0u);
    EXPECT_EQ(full->masks().runtime_walks(), 0u);
    ASSERT_TRUE(mixed->wait_precomputed(std::chrono::seconds(60)));
    ASSERT_TRUE(turns_end(workers)) << "prefetches still being walked";
    EXPECT_EQ(mixed->masks().walks(), st.walks + mixed->precompute_stats().walks + mixed->masks().runtime_walks())
        << "a suffix walked twice";
  }
}

// The worker walks what a sentence reaches first: after as many walks as the start state needs on demand, the start
// state's mask needs none, and the first states' masks after a few more.
TEST(TokenMasks, TheWorkerWalksTheStartStateFirst) {
  const auto vocab = synthetic_vocab();
  for (const char* text : kSchemas) {
    SCOPED_TRACE(text);
    const Grammar g = JsonGrammar::from_schema(ojson::parse(text));
    auto lazy = std::make_shared<CompiledGrammar>(g, vocab);
    TokenBits bits;
    lazy->masks().allowed(lazy->masks().matcher().start(), bits);
    const size_t needed = lazy->masks().runtime_walks();
    ASSERT_GT(needed, 0u);
    auto cg = std::make_shared<CompiledGrammar>(g, vocab);
    PrecomputeStats st;
    for (size_t k = 0; k < needed; ++k) ASSERT_TRUE(cg->masks().precompute_step(st));
    EXPECT_EQ(st.walks, needed);
    EXPECT_EQ(st.reach_walks, needed);
    TokenBits got;
    cg->masks().allowed(cg->masks().matcher().start(), got);
    EXPECT_EQ(cg->masks().runtime_walks(), 0u) << "the start state's masks were not the first walked";
    EXPECT_EQ(got.words, bits.words);
  }
}

// want() puts a state deep in a sentence before the passes (which start at the start state): the next steps walk its
// masks, and then its mask needs no walk.
TEST(TokenMasks, AWantedStateIsWalkedFirst) {
  const auto vocab = synthetic_vocab();
  auto cg = std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(ojson::parse(kSchemas[0])), vocab);
  const GrammarMatcher& m = cg->masks().matcher();
  StackSet state = m.start(), next;
  for (char ch : std::string("{\"name\": \"ab")) {
    ASSERT_TRUE(m.advance(state, static_cast<uint8_t>(ch), next));
    std::swap(state, next);
  }
  ASSERT_TRUE(cg->masks().want(state));
  EXPECT_FALSE(cg->masks().want(state)) << "queued twice";
  PrecomputeStats st;
  while (cg->masks().wanted()) ASSERT_TRUE(cg->masks().precompute_step(st));
  EXPECT_GT(st.prefetch_walks, 0u);
  EXPECT_EQ(st.walks, st.prefetch_walks) << "the passes went first";
  TokenBits got;
  cg->masks().allowed(state, got);
  EXPECT_EQ(cg->masks().runtime_walks(), 0u);
  EXPECT_EQ(got.words, brute(*vocab, m, state, kEnd).words);
  EXPECT_FALSE(cg->masks().want(state)) << "its mask is cached: nothing to walk";
}

// ready(): a state deep in a sentence of a new grammar needs walks; with a worker thread, asking puts them at the head
// of its line (a held worker, released, walks them before either pass), and once walked the state is ready and its
// mask needs no walk. Without a worker thread to ask, every state is "ready": the caller walks.
TEST(TokenMasks, AStateNotReadyIsWalkedFirstByTheWorker) {
  const auto vocab = synthetic_vocab();
  const auto schema = ojson::parse(kSchemas[0]);
  auto cg = std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(schema), vocab);
  const GrammarMatcher& m = cg->masks().matcher();
  StackSet state = m.start(), next;
  for (char ch : std::string("{\"name\": \"ab")) {
    ASSERT_TRUE(m.advance(state, static_cast<uint8_t>(ch), next));
    std::swap(state, next);
  }
  EXPECT_TRUE(cg->ready(state)) << "no worker: the caller walks";
  EXPECT_FALSE(cg->masks().ready(state));
  EXPECT_FALSE(cg->masks().wanted()) << "nobody to ask";
  MaskWorkers idle(0);
  cg->precompute_async("no thread", idle);
  EXPECT_TRUE(cg->ready(state)) << "a pool of no thread: the caller walks";

  auto held = std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(schema), vocab);
  MaskWorkers workers(1);
  workers.hold(true);
  held->precompute_async("held", workers);
  EXPECT_FALSE(held->ready(state));
  EXPECT_TRUE(held->masks().wanted());
  EXPECT_EQ(workers.pending(), 1u);
  // The worker's turns, run here while it is held (one caller at a time): the wanted walks come first.
  while (held->masks().wanted()) ASSERT_TRUE(held->precompute_step({}));
  const PrecomputeStats st = held->precompute_stats();
  EXPECT_GT(st.prefetch_walks, 0u);
  EXPECT_EQ(st.walks, st.prefetch_walks) << "a pass went first";
  EXPECT_TRUE(held->ready(state));
  workers.hold(false);
  TokenBits got;
  held->masks().allowed(state, got);
  EXPECT_EQ(held->masks().runtime_walks(), 0u);
  EXPECT_EQ(got.words, brute(*vocab, m, state, kEnd).words);
  held.reset();  // the worker drops it at its next turn
  EXPECT_TRUE(turns_end(workers));
}

// A pool of two workers serves eight grammars: never more than two walks at once, every grammar done.
TEST(TokenMasks, TheWorkerPoolIsBounded) {
  const auto vocab = synthetic_vocab();
  MaskWorkers workers(2);
  EXPECT_EQ(workers.threads(), 2u);
  std::vector<std::shared_ptr<CompiledGrammar>> gs;
  for (int round = 0; round < 2; ++round)
    for (size_t i = 0; i < 4; ++i) {
      gs.push_back(std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(ojson::parse(kSchemas[i])), vocab));
      gs.back()->precompute_async("pool", workers);
    }
  for (auto& g : gs) {
    ASSERT_TRUE(g->wait_precomputed(std::chrono::seconds(120)));
    EXPECT_GT(g->precompute_stats().walks, 0u);
    EXPECT_EQ(g->masks().walks(), g->precompute_stats().walks);
  }
  EXPECT_LE(workers.peak_busy(), 2u);
  EXPECT_GE(workers.peak_busy(), 1u);
  EXPECT_TRUE(turns_end(workers));
}

// Over 248k tokens: a new grammar's first mask comes long before its precomputation ends (the worker is still at it),
// and dropping the grammar then neither waits for the walk in progress nor leaves the worker holding it.
TEST(TokenMasks, ANewGrammarsFirstMaskDoesNotWaitAndDroppingItDoesNotBlock) {
  const Tokenizer& tok = qwen35();
  const auto vocab = qwen_vocab();
  MaskWorkers workers(1);
  auto g = std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(ojson::parse(kSchemas[0])), vocab);
  g->precompute_async("big", workers);
  std::optional<GrammarConstraint> c;
  c.emplace(g, GrammarConstraintOptions{{tok.require_token_id("<|im_end|>")}, std::nullopt});
  const TokenBits first = c->allowed();
  EXPECT_TRUE(first.test(tok.encode("{")[0]));
  EXPECT_TRUE(g->precomputing()) << "the whole 248k precomputation ended before the first mask: nothing tested";
  std::weak_ptr<CompiledGrammar> weak = g;
  const auto t0 = std::chrono::steady_clock::now();
  g.reset();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.05)
      << "the request's constraint still holds it: nothing to wait for";
  EXPECT_FALSE(weak.expired()) << "the constraint holds it";
  const auto t1 = std::chrono::steady_clock::now();
  c.reset();  // the request ends: only the worker's turn may hold it now
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), 0.05);
  for (int i = 0; i < 2000 && !weak.expired(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(weak.expired()) << "the worker still holds a grammar nobody uses after 2 s";
  EXPECT_TRUE(turns_end(workers));
}

// A walk is abandoned part way when its worker is told to stop (the pool stopping, or the grammar dropped by all
// else): nothing half-walked is kept, and the next step walks it again in full.
TEST(TokenMasks, AWalkIsAbandonedPartWayWhenCancelled) {
  const auto vocab = qwen_vocab();
  auto cg = std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(ojson::parse(kSchemas[0])), vocab);
  int polls = 0;
  PrecomputeStats st;
  EXPECT_FALSE(cg->masks().precompute_step(st, [&] { return ++polls > 3; }));  // once on entry, then during the walk
  EXPECT_TRUE(st.stopped);
  EXPECT_GE(polls, 4) << "the walk did not look at the stop part way";
  EXPECT_EQ(st.walks, 0u);
  EXPECT_EQ(cg->masks().walks(), 0u);
  PrecomputeStats again;
  EXPECT_TRUE(cg->masks().precompute_step(again));
  EXPECT_EQ(again.walks, 1u);
  EXPECT_EQ(cg->masks().walks(), 1u);
}

TEST(TokenMasks, FreeFormJsonObjectsMatchBruteForce) {
  const auto vocab = synthetic_vocab();
  auto cg = std::make_shared<CompiledGrammar>(JsonGrammar::any_object(), vocab);
  const std::vector<std::string> outputs = walks(cg, kEnd, 20, 99, 60);
  EXPECT_FALSE(outputs.empty());
  for (const std::string& out : outputs) {
    EXPECT_TRUE(nlohmann::json::accept(out)) << "not JSON: " << out;
    EXPECT_TRUE(nlohmann::json::parse(out).is_object()) << out;
  }
}

const Tokenizer& qwen35() {
  static const Tokenizer tok = Tokenizer::from_json(ninfer::testing::read_file(std::string(NINFER_TOKENIZER_FIXTURES) + "/tokenizer.json"));
  return tok;
}

std::shared_ptr<TokenVocabulary> qwen_vocab() {
  return std::const_pointer_cast<TokenVocabulary>(TokenVocabulary::from_tokenizer(qwen35()));
}

// Follows `ids` (an encoded answer) through a constraint over `cg`: before each token the mask equals brute force,
// allows that token and not the end token; the answer completes the grammar.
void expect_brute_force_along(const std::shared_ptr<CompiledGrammar>& cg, const std::vector<int32_t>& ids, int32_t end) {
  const GrammarMatcher& m = cg->masks().matcher();
  GrammarConstraint c(cg, {{end}, std::nullopt});
  StackSet state = m.start(), next;
  for (int32_t id : ids) {
    const TokenBits got = c.allowed();
    ASSERT_EQ(got.words, brute(cg->vocab(), m, state, end).words) << "before token " << id;
    ASSERT_TRUE(got.test(id));
    EXPECT_FALSE(got.test(end));
    c.accept(id);
    for (char ch : cg->vocab().bytes(id)) {
      ASSERT_TRUE(m.advance(state, static_cast<uint8_t>(ch), next));
      std::swap(state, next);
    }
  }
  EXPECT_TRUE(c.complete());
}

TEST(TokenMasks, QwenVocabularyAlongAnEncodedAnswerMatchesBruteForce) {
  const Tokenizer& tok = qwen35();
  const auto vocab = qwen_vocab();
  ASSERT_GT(vocab->size(), 248000u);
  const int32_t end = tok.require_token_id("<|im_end|>");
  auto cg = std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(ojson::parse(kSchemas[0])), vocab);
  const std::string answer = "\n{\"name\": \"Zoë \\u00e9 \\\"q\\\"\", \"age\": 37}";
  const std::vector<int32_t> ids = tok.encode(answer);
  expect_brute_force_along(cg, ids, end);
  GrammarConstraint c(cg, {{end}, std::nullopt});
  for (int32_t id : ids) c.allowed(), c.accept(id);
  const TokenBits last = c.allowed();
  EXPECT_TRUE(last.test(end));
  EXPECT_EQ(last.count(), 1u) << "after the closing brace only the end token";
  // The same answer again: every state is cached now.
  const size_t misses = cg->masks().state_misses();
  GrammarConstraint again(cg, {{end}, std::nullopt});
  for (int32_t id : tok.encode(answer)) again.allowed(), again.accept(id);
  EXPECT_EQ(cg->masks().state_misses(), misses);
}

// The answer's states again, from masks precomputed over the 248k vocabulary: brute force, and no walk in the step.
TEST(TokenMasks, QwenVocabularyPrecomputedMatchesBruteForce) {
  const Tokenizer& tok = qwen35();
  const auto vocab = qwen_vocab();
  const int32_t end = tok.require_token_id("<|im_end|>");
  auto cg = std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(ojson::parse(kSchemas[1])), vocab);
  const PrecomputeStats st = cg->masks().precompute();
  EXPECT_EQ(st.left_to_runtime, 0u);
  expect_brute_force_along(cg, tok.encode("{\"a\": -12, \"b\": \"x\u00e9\", \"c\": true}"), end);
  EXPECT_EQ(cg->masks().runtime_walks(), 0u);
}

// Bounded strings over the 248k vocabulary, precomputed: masks along encoded answers with multi-character and
// multi-byte tokens (a name of 9 code points, one of exactly 12, tags at their bound of 4) equal brute force, with no
// walk in the step; and the precomputation's walks do not depend on the bounds.
TEST(TokenMasks, QwenVocabularyBoundedStringsMatchBruteForce) {
  const Tokenizer& tok = qwen35();
  const auto vocab = qwen_vocab();
  const int32_t end = tok.require_token_id("<|im_end|>");
  const auto schema_text = [](int name_max, int tag_max) {
    return fmt::format(R"({{"type":"object","properties":{{"name":{{"type":"string","minLength":2,"maxLength":{}}},)"
                       R"("tags":{{"type":"array","items":{{"type":"string","maxLength":{}}},"maxItems":2}}}},)"
                       R"("required":["name","tags"]}})",
                       name_max, tag_max);
  };
  auto cg = std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(ojson::parse(schema_text(12, 4))), vocab);
  const PrecomputeStats st = cg->masks().precompute();
  EXPECT_EQ(st.left_to_runtime, 0u);
  const Grammar wide_grammar = JsonGrammar::from_schema(ojson::parse(schema_text(60, 30)));
  GrammarMasks wide(wide_grammar, *vocab);
  EXPECT_EQ(wide.precompute().walks, st.walks) << "walks grew with maxLength";
  const GrammarMatcher& m = cg->masks().matcher();
  const std::string name = "Zo\xc3\xab \xe2\x98\x80\xf0\x9f\x98\x80 \xe6\x97\xa5\xe6\x9c\xac";  // 9 code points
  for (const std::string& answer : {"{\"name\": \"" + name + "\", \"tags\": [\"abcd\", \"\xc3\xa9\"]}",
                                    std::string("{\"name\": \"internationa\", \"tags\": [\"\\u00e9xyz\"]}")}) {
    SCOPED_TRACE(answer);
    ASSERT_TRUE(m.matches(answer));
    expect_brute_force_along(cg, tok.encode(answer), end);
  }
  EXPECT_FALSE(m.matches("{\"name\": \"internationals\", \"tags\": []}")) << "14 characters";
  EXPECT_EQ(cg->masks().runtime_walks(), 0u);
}

// The vectorised pass against the plain rule on every kind of word (none, all, some allowed) and a padded row.
TEST(GrammarConstraint, ApplyTokenMaskSetsExactlyTheRuledOutLogits) {
  std::mt19937 rng(8);
  for (size_t n : {size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}, size_t{5000}}) {
    TokenBits allowed(n);
    for (size_t id = 0; id < n; ++id) {
      const size_t word = id / 64;
      if (word % 3 == 1 || (word % 3 == 2 && rng() % 8 < 1 + word % 7)) allowed.set(static_cast<int32_t>(id));  // 1/8..7/8
    }
    std::vector<float> logits(n + 70);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i) * 0.5f;
    const bool any = apply_token_mask(allowed, logits);
    EXPECT_EQ(any, allowed.count() > 0) << n;
    for (size_t i = 0; i < logits.size(); ++i) {
      const bool ok = i < n && allowed.test(static_cast<int32_t>(i));
      ASSERT_EQ(logits[i], ok ? static_cast<float>(i) * 0.5f : -std::numeric_limits<float>::infinity()) << n << " " << i;
    }
  }
}

TEST(GrammarConstraint, MasksLogitsAndEndsOnlyWhenComplete) {
  const auto vocab = synthetic_vocab();
  auto cg = std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(ojson::parse(R"({"const":"ab"})")), vocab);
  GrammarConstraint c(cg, {{kEnd}, std::nullopt});
  std::vector<float> logits(vocab->size() + 5, 1.0f);  // the model's vocabulary may be padded past the tokenizer's
  c.mask(logits);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(logits[kEnd], -kInf);
  EXPECT_EQ(logits[1 + '"'], 1.0f);  // single-byte token '"'
  EXPECT_EQ(logits[1 + 'a'], -kInf);
  for (size_t id = vocab->size(); id < logits.size(); ++id) EXPECT_EQ(logits[id], -kInf);
  EXPECT_THROW(c.accept(1 + 'a'), Error);
  EXPECT_THROW(c.accept(kEnd), Error) << "the output cannot end before the grammar is complete";
  for (char ch : std::string("\"ab\"")) c.accept(1 + static_cast<uint8_t>(ch));
  EXPECT_TRUE(c.complete());
  std::fill(logits.begin(), logits.end(), 1.0f);
  c.mask(logits);
  size_t open = 0;
  for (float x : logits) open += x == 1.0f;
  EXPECT_EQ(open, 1u);
  EXPECT_EQ(logits[kEnd], 1.0f);
  c.accept(kEnd);
  EXPECT_THROW(c.accept(1 + 'a'), Error) << "nothing after the end";
}

TEST(GrammarConstraint, StartsAfterTheGivenToken) {
  const auto vocab = synthetic_vocab();
  auto cg = std::make_shared<CompiledGrammar>(JsonGrammar::from_schema(ojson::parse(R"({"type":"integer"})")), vocab);
  const int32_t think_end = static_cast<int32_t>(vocab->size()) - 1;  // the control token stands in for </think>
  GrammarConstraint c(cg, {{kEnd}, think_end});
  std::vector<float> logits(vocab->size(), 1.0f);
  c.mask(logits);
  EXPECT_EQ(std::count(logits.begin(), logits.end(), 1.0f), static_cast<std::ptrdiff_t>(logits.size()) - 1)
      << "not started: everything but the end token (an answer must come)";
  EXPECT_EQ(logits[kEnd], -std::numeric_limits<float>::infinity());
  c.accept(1 + 'x');  // reasoning text: free
  EXPECT_FALSE(c.started());
  c.accept(think_end);
  EXPECT_TRUE(c.started());
  c.mask(logits);
  EXPECT_EQ(logits[1 + 'x'], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(logits[1 + '7'], 1.0f);
  EXPECT_EQ(logits[1 + '\n'], 1.0f) << "leading whitespace after </think>";
}

}  // namespace
}  // namespace ninfer::constrain
