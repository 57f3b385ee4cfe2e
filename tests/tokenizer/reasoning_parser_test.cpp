// Tests the reasoning parser (at once, every split point, byte-by-byte) and the reasoning budget.
#include "engine/tokenizer/reasoning_parser.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/tokenizer/detokenizer.h"
#include "engine/tokenizer/reasoning_budget.h"
#include "tests/tokenizer/fixtures.h"

namespace ninfer {
namespace {

struct Case {
  const char* text;
  bool prompt_opened;
  bool thinking;
  bool trim;
  const char* reasoning;
  const char* content;
};

const Case kCases[] = {
    // prompt opened <think> (Qwen3.5 thinking on)
    {"\nplan A\nplan B\n</think>\n\nThe answer.", true, true, true, "plan A\nplan B", "The answer."},
    {"\nplan A\nplan B\n</think>\n\nThe answer.", true, true, false, "\nplan A\nplan B\n", "\n\nThe answer."},
    {"<think>\nrepeated open\n</think>\n\nok", true, true, true, "repeated open", "ok"},
    {"only thinking, truncated\n\n", true, true, true, "only thinking, truncated", ""},
    {"unfinished tag </thi", true, true, true, "unfinished tag </thi", ""},
    {"a < b and </ b> </think>x", true, true, true, "a < b and </ b> ", "x"},
    {"</think>", true, true, true, "", ""},
    {"r</think>c</think>d", true, true, true, "r", "c</think>d"},
    {"I will "
     "call.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
     true, true, true, "I will call.",
     "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"},
    {"mention <tool_call> in prose then </think>\n\nanswer", true, true, true, "mention <tool_call> in prose then ",
     "answer"},
    {"<tool_call>", true, true, true, "<tool_call>", ""},
    {"多语言推理 🙂\n</think>\n\n答案 ✅", true, true, true, "多语言推理 🙂", "答案 ✅"},
    // thinking disabled: everything is content
    {"Direct answer </think> kept", true, false, true, "", "Direct answer </think> kept"},
    {"\n\nDirect", false, false, true, "", "Direct"},
    // prompt did not open the block: the model may open it itself
    {"<think>\nhmm\n</think>\n\nyes", false, true, true, "hmm", "yes"},
    {"  \n<think>x</think>y", false, true, true, "x", "y"},
    {"no block at all", false, true, true, "", "no block at all"},
    {" <thin", false, true, true, "", " <thin"},
    {"", true, true, true, "", ""},
    {"", false, true, true, "", ""},
};

ReasoningParserOptions opts(const Case& c) {
  ReasoningParserOptions o;
  o.prompt_opened_reasoning = c.prompt_opened;
  o.thinking_enabled = c.thinking;
  o.trim_newlines = c.trim;
  return o;
}

ReasoningDelta feed_chunks(const std::vector<std::string_view>& chunks, const ReasoningParserOptions& o) {
  ReasoningParser p(o);
  ReasoningDelta all;
  for (auto ch : chunks) {
    ReasoningDelta d = p.feed(ch);
    all.reasoning += d.reasoning;
    all.content += d.content;
  }
  ReasoningDelta d = p.finish();
  all.reasoning += d.reasoning;
  all.content += d.content;
  return all;
}

TEST(ReasoningParser, AtOnce) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.text);
    ReasoningDelta d = ReasoningParser::parse(c.text, opts(c));
    EXPECT_EQ(d.reasoning, c.reasoning);
    EXPECT_EQ(d.content, c.content);
  }
}

TEST(ReasoningParser, EverySplitPointAndByteByByte) {
  for (const Case& c : kCases) {
    std::string_view t = c.text;
    for (size_t cut = 0; cut <= t.size(); ++cut) {
      for (size_t cut2 = cut; cut2 <= t.size(); cut2 += std::max<size_t>(1, t.size() / 7)) {
        SCOPED_TRACE(std::string(c.text) + " @" + std::to_string(cut) + "," + std::to_string(cut2));
        ReasoningDelta d = feed_chunks({t.substr(0, cut), t.substr(cut, cut2 - cut), t.substr(cut2)}, opts(c));
        EXPECT_EQ(d.reasoning, c.reasoning);
        EXPECT_EQ(d.content, c.content);
      }
    }
    std::vector<std::string_view> bytes;
    for (size_t i = 0; i < t.size(); ++i) bytes.push_back(t.substr(i, 1));
    ReasoningDelta d = feed_chunks(bytes, opts(c));
    EXPECT_EQ(d.reasoning, c.reasoning) << c.text;
    EXPECT_EQ(d.content, c.content) << c.text;
  }
}

TEST(ReasoningParser, TokenByTokenWithRealTokens) {
  // The real pipeline: ids -> Detokenizer pieces (whole characters) -> parser, one token at a time.
  const Tokenizer& tok = test::qwen35();
  for (const Case& c : kCases) {
    std::vector<int32_t> ids = tok.encode_with_special(c.text);
    Detokenizer detok(tok);
    std::vector<std::string> pieces;
    for (int32_t id : ids) pieces.push_back(detok.push(id));
    pieces.push_back(detok.finish());
    std::vector<std::string_view> chunks(pieces.begin(), pieces.end());
    ReasoningDelta d = feed_chunks(chunks, opts(c));
    EXPECT_EQ(d.reasoning, c.reasoning) << c.text;
    EXPECT_EQ(d.content, c.content) << c.text;
  }
}

TEST(ReasoningParser, StateFlags) {
  ReasoningParser p;
  EXPECT_TRUE(p.in_reasoning());
  p.feed("x</th");
  EXPECT_FALSE(p.reasoning_ended());
  ReasoningDelta d = p.feed("ink>\n\ny");
  EXPECT_TRUE(p.reasoning_ended());
  EXPECT_FALSE(p.in_reasoning());
  EXPECT_EQ(d.content, "y");
}

TEST(ReasoningBudget, Effort) {
  EXPECT_EQ(parse_reasoning_effort("none"), ReasoningEffort::kNone);
  EXPECT_EQ(parse_reasoning_effort("high"), ReasoningEffort::kHigh);
  EXPECT_THROW(parse_reasoning_effort("max"), Error);
  ReasoningConfig none = resolve_reasoning(ReasoningEffort::kNone);
  EXPECT_EQ(none.enable_thinking, std::optional<bool>(false));
  EXPECT_EQ(none.budget_tokens, std::nullopt);
  ReasoningBudgets b;
  b.medium = 77;
  ReasoningConfig med = resolve_reasoning(ReasoningEffort::kMedium, b);
  EXPECT_EQ(med.enable_thinking, std::optional<bool>(true));
  EXPECT_EQ(med.budget_tokens, std::optional<int32_t>(77));
  EXPECT_EQ(resolve_reasoning(ReasoningEffort::kLow).budget_tokens, std::optional<int32_t>(1024));
  EXPECT_EQ(resolve_reasoning(ReasoningEffort::kHigh).budget_tokens, std::optional<int32_t>(16384));
  EXPECT_EQ(resolve_reasoning(std::nullopt).enable_thinking, std::nullopt);
}

TEST(ReasoningBudget, ForcesCloseOnce) {
  const Tokenizer& tok = test::qwen35();
  ReasoningBudgetTracker t(tok, 3, true);
  int32_t a = tok.encode("a")[0];
  EXPECT_FALSE(t.observe(a));
  EXPECT_FALSE(t.observe(a));
  EXPECT_TRUE(t.observe(a));
  EXPECT_TRUE(t.forced_close());
  EXPECT_EQ(tok.decode(t.closing_ids()), "\n</think>\n\n");
  EXPECT_EQ(std::count(t.closing_ids().begin(), t.closing_ids().end(), tok.require_token_id("</think>")), 1);
  for (int32_t id : t.closing_ids()) EXPECT_FALSE(t.observe(id));
  EXPECT_FALSE(t.in_reasoning());
  EXPECT_FALSE(t.observe(a));
  EXPECT_EQ(t.used(), 4);  // three reasoning tokens + the forced "\n"
  // a block the model opens itself, closed by the model within budget
  ReasoningBudgetTracker u(tok, 10, false);
  EXPECT_FALSE(u.observe(tok.require_token_id("<think>")));
  EXPECT_TRUE(u.in_reasoning());
  EXPECT_FALSE(u.observe(a));
  EXPECT_FALSE(u.observe(tok.require_token_id("</think>")));
  EXPECT_FALSE(u.in_reasoning());
  EXPECT_FALSE(u.forced_close());
}

// request (reasoning_effort, capped by --reasoning-budget) > --reasoning-budget > the artifact's default > none.
TEST(ReasoningBudget, PrecedenceRequestThenServerThenArtifact) {
  using B = std::optional<int64_t>;
  using S = ReasoningBudgetSource;
  auto check = [](B request, B server, B artifact, B tokens, S source) {
    const ReasoningBudget r = resolve_reasoning_budget(request, server, artifact);
    EXPECT_EQ(r.tokens, tokens);
    EXPECT_EQ(r.source, source);
  };
  const B none;
  check(none, none, none, none, S::kNone);
  check(none, none, B(96), B(96), S::kArtifact);        // only the artifact says
  check(none, B(500), B(96), B(500), S::kServer);       // the flag over the artifact
  check(none, B(0), B(96), B(0), S::kServer);           // 0 is a budget, not "unset"
  check(B(1024), none, B(96), B(1024), S::kRequest);    // the request over the artifact, larger or smaller
  check(B(16), none, B(96), B(16), S::kRequest);
  check(B(1024), B(300), B(96), B(300), S::kRequest);   // the flag caps the request's budget
  check(B(200), B(300), none, B(200), S::kRequest);
}

TEST(ReasoningBudget, ArtifactDefaultIsAnIntegerTokenCount) {
  using nlohmann::json;
  EXPECT_EQ(generation_reasoning_budget(json::object(), "a"), std::nullopt);
  EXPECT_EQ(generation_reasoning_budget(json(nullptr), "a"), std::nullopt);
  EXPECT_EQ(generation_reasoning_budget(json{{"reasoning_budget", nullptr}}, "a"), std::nullopt);
  EXPECT_EQ(generation_reasoning_budget(json{{"temperature", 0.6}, {"reasoning_budget", 96}}, "a"), 96);
  EXPECT_EQ(generation_reasoning_budget(json{{"reasoning_budget", 0}}, "a"), 0);
  for (const json& bad : {json(-1), json(1.5), json("96"), json(true), json(int64_t{1} << 31)}) {
    try {
      generation_reasoning_budget(json{{"reasoning_budget", bad}}, "m.ninfer (metadata generation)");
      ADD_FAILURE() << bad.dump() << " accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("m.ninfer (metadata generation)"), std::string::npos) << what;
      EXPECT_NE(what.find("reasoning_budget " + bad.dump()), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace ninfer
