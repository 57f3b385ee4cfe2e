// Tool-call parser tests: every recorded output fed at every UTF-8 split point (and a byte at a time) gives the
// whole-text result; argument fragments rebuild the arguments; reasoning before a call; format detection.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/reasoning_parser.h"
#include "server/tool_call_parser.h"
#include "tests/server/tool_call_recordings.h"

namespace ninfer::server {
namespace {

using testing::ToolCallRecording;
using testing::tool_call_recordings;
using ojson = nlohmann::ordered_json;

ToolCallParserOptions options_for(ToolCallFormat format) {
  ToolCallParserOptions o;
  o.format = format;
  static const ojson tools = ojson::parse(testing::kRecordedTools);
  o.tools = tools;
  auto counter = std::make_shared<int>(0);
  o.new_id = [counter] { return "call_" + std::to_string(++*counter); };
  return o;
}

bool char_boundary(const std::string& s, size_t i) {
  return i == 0 || i == s.size() || (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
}

// What a stream of feeds produced, checked for the streaming invariants on the way.
struct Streamed {
  std::string content;
  std::vector<ToolCall> calls;  // rebuilt from the events
};

void absorb(const ToolCallDelta& d, Streamed& s) {
  s.content += d.content;
  for (const ToolCallEvent& e : d.events) {
    if (e.start) {
      ASSERT_EQ(e.index, s.calls.size());
      ASSERT_TRUE(e.arguments.empty());
      s.calls.push_back({e.id, e.name, ""});
    } else {
      ASSERT_LT(e.index, s.calls.size());
      s.calls[e.index].arguments += e.arguments;
    }
  }
}

Streamed stream(const std::vector<std::string>& pieces, ToolCallParserOptions o, std::vector<ToolCall>* final_calls) {
  ToolCallParser p(std::move(o));
  Streamed s;
  for (const std::string& piece : pieces) absorb(p.feed(piece), s);
  absorb(p.finish(), s);
  if (final_calls) *final_calls = p.calls();
  return s;
}

void expect_matches(const ToolCallRecording& r, const Streamed& s, const std::vector<ToolCall>& calls,
                    const std::string& where) {
  EXPECT_EQ(s.content, r.content) << r.name << " " << where;
  ASSERT_EQ(s.calls.size(), r.calls.size()) << r.name << " " << where;
  ASSERT_EQ(calls.size(), r.calls.size()) << r.name << " " << where;
  for (size_t i = 0; i < r.calls.size(); ++i) {
    EXPECT_EQ(s.calls[i].name, r.calls[i].name) << r.name << " " << where;
    EXPECT_EQ(s.calls[i].arguments, r.calls[i].arguments) << r.name << " " << where;
    EXPECT_EQ(s.calls[i].id, calls[i].id) << r.name << " " << where;  // stream ids = final ids
    EXPECT_EQ(calls[i].arguments, r.calls[i].arguments) << r.name << " " << where;
  }
}

TEST(ToolCallParser, RecordingsParseWhole) {
  ASSERT_GE(tool_call_recordings().size(), 10u);
  for (const auto& r : tool_call_recordings()) {
    ToolCallParser::Result whole = ToolCallParser::parse(r.text, options_for(r.format));
    EXPECT_EQ(whole.content, r.content) << r.name;
    ASSERT_EQ(whole.calls.size(), r.calls.size()) << r.name;
    for (size_t i = 0; i < r.calls.size(); ++i) {
      EXPECT_EQ(whole.calls[i].name, r.calls[i].name) << r.name;
      EXPECT_EQ(whole.calls[i].arguments, r.calls[i].arguments) << r.name;
      EXPECT_TRUE(ojson::accept(whole.calls[i].arguments)) << r.name;
      EXPECT_EQ(whole.calls[i].id, "call_" + std::to_string(i + 1)) << r.name;
    }
  }
}

TEST(ToolCallParser, EverySplitPointGivesTheWholeResult) {
  for (const auto& r : tool_call_recordings()) {
    for (size_t i = 0; i <= r.text.size(); ++i) {
      if (!char_boundary(r.text, i)) continue;
      std::vector<ToolCall> calls;
      Streamed s = stream({r.text.substr(0, i), r.text.substr(i)}, options_for(r.format), &calls);
      expect_matches(r, s, calls, "split at " + std::to_string(i));
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(ToolCallParser, OneCharacterAtATimeAndEveryTwoSplits) {
  for (const auto& r : tool_call_recordings()) {
    std::vector<std::string> chars;
    for (size_t i = 0; i < r.text.size();) {
      size_t j = i + 1;
      while (j < r.text.size() && !char_boundary(r.text, j)) ++j;
      chars.push_back(r.text.substr(i, j - i));
      i = j;
    }
    std::vector<ToolCall> calls;
    expect_matches(r, stream(chars, options_for(r.format), &calls), calls, "char by char");
    // Three pieces: every pair of split points (the recordings are short).
    for (size_t i = 0; i <= r.text.size(); i += 1) {
      if (!char_boundary(r.text, i)) continue;
      for (size_t j = i; j <= r.text.size(); ++j) {
        if (!char_boundary(r.text, j)) continue;
        Streamed s = stream({r.text.substr(0, i), r.text.substr(i, j - i), r.text.substr(j)}, options_for(r.format),
                            &calls);
        expect_matches(r, s, calls, "splits at " + std::to_string(i) + "," + std::to_string(j));
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

TEST(ToolCallParser, PartialMarkupNeverReachesContentEarly) {
  // While a call is being written, nothing of it is released as content.
  ToolCallParser p(options_for(ToolCallFormat::kXml));
  EXPECT_EQ(p.feed("Hi.\n<tool").content, "Hi.");
  EXPECT_EQ(p.feed("_call>\n<function=get_time>\n").content, "");
  ToolCallDelta d = p.feed("</function>\n</tool_call>");
  EXPECT_EQ(d.content, "");
  ASSERT_EQ(d.events.size(), 2u);
  EXPECT_TRUE(d.events[0].start);
  EXPECT_EQ(d.events[0].name, "get_time");
  EXPECT_EQ(d.events[1].arguments, "{}");
}

TEST(ToolCallParser, ArgumentFragmentsPerParameter) {
  ToolCallParser p(options_for(ToolCallFormat::kXml));
  ToolCallDelta d = p.feed(testing::find_tool_call_recording("xml_single")->text);
  ASSERT_EQ(d.events.size(), 4u);
  EXPECT_EQ(d.events[1].arguments, R"({"city":"Paris")");
  EXPECT_EQ(d.events[2].arguments, R"(,"days":3)");
  EXPECT_EQ(d.events[3].arguments, "}");
}

TEST(ToolCallParser, EventsSayWhereTheyFallInTheContent) {
  ToolCallParser p(options_for(ToolCallFormat::kXml));
  ToolCallDelta d = p.feed("Before.\n<tool_call>\n<function=get_time>\n</function>\n</tool_call>\nAfter. ");
  EXPECT_EQ(d.content, "Before.\nAfter.");  // the final space is held: it may still precede a call
  ASSERT_EQ(d.events.size(), 2u);
  EXPECT_EQ(d.events[0].content_offset, 7u);
  EXPECT_EQ(d.events[1].content_offset, 7u);
}

TEST(ToolCallParser, MaxCallsKeepsTheFirst) {
  ToolCallParserOptions o = options_for(ToolCallFormat::kXml);
  o.max_calls = 1;
  ToolCallParser::Result r = ToolCallParser::parse(testing::find_tool_call_recording("xml_two")->text, o);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.content, "");
}

TEST(ToolCallParser, DefaultIdsAreUniqueCallIds) {
  ToolCallParserOptions o;
  o.format = ToolCallFormat::kXml;
  ToolCallParser::Result r = ToolCallParser::parse(testing::find_tool_call_recording("xml_two")->text, o);
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].id.rfind("call_", 0), 0u);
  EXPECT_EQ(r.calls[0].id.size(), 29u);
  EXPECT_NE(r.calls[0].id, r.calls[1].id);
}

// The content channel of a real request is what the reasoning parser leaves; the tool-call parser runs after it.
struct Pipeline {
  std::string reasoning, content;
  std::vector<ToolCall> calls;
};

Pipeline run_pipeline(const std::vector<std::string>& pieces) {
  ReasoningParser rp(ReasoningParserOptions{});  // the prompt opened <think>
  ToolCallParser tp(options_for(ToolCallFormat::kXml));
  Pipeline out;
  auto take = [&](const ReasoningDelta& d) {
    out.reasoning += d.reasoning;
    out.content += tp.feed(d.content).content;
  };
  for (const auto& p : pieces) take(rp.feed(p));
  take(rp.finish());
  out.content += tp.finish().content;
  out.calls = tp.calls();
  return out;
}

TEST(ToolCallParser, ReasoningBeforeTheCallStaysReasoningAtEverySplit) {
  const std::string call = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
                           "</tool_call>";
  for (const std::string& text : {"The user wants the weather; I call get_weather.\n</think>\n\n" + call,
                                 "I call the tool without closing the block.\n" + call}) {
    Pipeline whole = run_pipeline({text});
    EXPECT_NE(whole.reasoning.find("I call"), std::string::npos) << text;
    EXPECT_EQ(whole.reasoning.find("<tool_call>"), std::string::npos) << text;
    EXPECT_EQ(whole.content, "") << text;
    ASSERT_EQ(whole.calls.size(), 1u) << text;
    EXPECT_EQ(whole.calls[0].arguments, R"({"city":"Paris"})");
    for (size_t i = 0; i <= text.size(); ++i) {
      Pipeline s = run_pipeline({text.substr(0, i), text.substr(i)});
      EXPECT_EQ(s.reasoning, whole.reasoning) << i;
      EXPECT_EQ(s.content, whole.content) << i;
      ASSERT_EQ(s.calls.size(), 1u) << i;
      EXPECT_EQ(s.calls[0].arguments, whole.calls[0].arguments) << i;
    }
  }
}

TEST(ToolCallFormat, ChosenFromTheTemplateOrTheFlag) {
  EXPECT_EQ(tool_call_format_of_template("{{- '<tool_call>\\n<function=' + tool_call.name + '>\\n' }}"),
            ToolCallFormat::kXml);
  EXPECT_EQ(tool_call_format_of_template("{{- '<tool_call>\\n{\"name\": \"' }}{{ tool_call.name }}"),
            ToolCallFormat::kHermes);
  EXPECT_EQ(tool_call_format_of_template("{{ messages }}"), ToolCallFormat::kNone);
  EXPECT_EQ(tool_call_format_of_template(""), ToolCallFormat::kXml);  // built-in Qwen3.5 renderer
  EXPECT_EQ(resolve_tool_call_format("hermes", "<function="), ToolCallFormat::kHermes);
  EXPECT_EQ(resolve_tool_call_format("none", "<function="), ToolCallFormat::kNone);
  EXPECT_EQ(resolve_tool_call_format("auto", "<parameter="), ToolCallFormat::kXml);
  EXPECT_THROW(resolve_tool_call_format("json", ""), std::invalid_argument);
}

TEST(ToolCallFormat, ParserOnlyForToolsWithAutoChoice) {
  GenerationRequest g;
  EXPECT_FALSE(tool_call_parser_options(g, ToolCallFormat::kXml));
  g.tools = ojson::parse(testing::kRecordedTools);
  g.tool_choice.mode = ToolChoiceMode::kNone;
  EXPECT_FALSE(tool_call_parser_options(g, ToolCallFormat::kXml));
  g.tool_choice.mode = ToolChoiceMode::kAuto;
  EXPECT_FALSE(tool_call_parser_options(g, ToolCallFormat::kNone));
  auto o = tool_call_parser_options(g, ToolCallFormat::kHermes);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->format, ToolCallFormat::kHermes);
  EXPECT_EQ(o->max_calls, std::numeric_limits<size_t>::max());
  g.parallel_tool_calls = false;
  EXPECT_EQ(tool_call_parser_options(g, ToolCallFormat::kXml)->max_calls, 1u);
}

}  // namespace
}  // namespace ninfer::server
