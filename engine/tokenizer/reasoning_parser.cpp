// Owns the reasoning/content state machine with tag hold-back.
#include "engine/tokenizer/reasoning_parser.h"

namespace ninfer {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";
constexpr std::string_view kToolCall = "<tool_call>";
constexpr std::string_view kFunction = "<function";

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// `s` is a proper prefix of `tag` (and not empty).
bool proper_prefix(std::string_view s, std::string_view tag) {
  return !s.empty() && s.size() < tag.size() && tag.substr(0, s.size()) == s;
}

struct Scan {
  enum Event { kNone, kClose, kToolCall } event = kNone;
  size_t pos;  // event position, or where held text starts
};

// Finds the first reasoning terminator in `s`; without one, `pos` is where undecided text begins.
Scan scan_reasoning(std::string_view s, bool tool_calls, bool final) {
  for (size_t i = s.find('<'); i != std::string_view::npos; i = s.find('<', i + 1)) {
    std::string_view rest = s.substr(i);
    if (rest.starts_with(kClose)) return {Scan::kClose, i};
    if (!final && proper_prefix(rest, kClose)) return {Scan::kNone, i};
    if (!tool_calls) continue;
    if (rest.starts_with(kToolCall)) {
      size_t j = kToolCall.size();
      while (j < rest.size() && is_ws(rest[j])) ++j;
      std::string_view after = rest.substr(j);
      if (after.starts_with(kFunction)) return {Scan::kToolCall, i};
      if (!final && (after.empty() || proper_prefix(after, kFunction))) return {Scan::kNone, i};
    } else if (!final && proper_prefix(rest, kToolCall)) {
      return {Scan::kNone, i};
    }
  }
  return {Scan::kNone, s.size()};
}

}  // namespace

ReasoningParser::ReasoningParser(ReasoningParserOptions options) : opt_(options) {
  if (!opt_.thinking_enabled)
    state_ = State::kContent;
  else
    state_ = opt_.prompt_opened_reasoning ? State::kReasoning : State::kStart;
}

ReasoningDelta ReasoningParser::feed(std::string_view text) {
  buf_ += text;
  ReasoningDelta out;
  run(out, false);
  return out;
}

ReasoningDelta ReasoningParser::finish() {
  ReasoningDelta out;
  run(out, true);
  buf_.clear();
  return out;
}

ReasoningDelta ReasoningParser::parse(std::string_view text, const ReasoningParserOptions& options) {
  ReasoningParser p(options);
  ReasoningDelta a = p.feed(text);
  ReasoningDelta b = p.finish();
  a.reasoning += b.reasoning;
  a.content += b.content;
  return a;
}

void ReasoningParser::run(ReasoningDelta& out, bool final) {
  for (;;) {
    if (state_ == State::kStart) {
      size_t i = 0;
      while (i < buf_.size() && is_ws(buf_[i])) ++i;
      std::string_view rest = std::string_view(buf_).substr(i);
      if (rest.starts_with(kOpen)) {
        buf_.erase(0, i + kOpen.size());
        state_ = State::kReasoning;
        at_block_start_ = true;
        continue;
      }
      if (!final && (rest.empty() || proper_prefix(rest, kOpen))) return;  // undecided
      state_ = State::kContent;
      at_block_start_ = false;  // no block: the text is content exactly as generated
      continue;
    }
    if (state_ == State::kContent) {
      if (at_block_start_ && opt_.trim_newlines) {
        size_t i = 0;
        while (i < buf_.size() && buf_[i] == '\n') ++i;
        buf_.erase(0, i);
        if (buf_.empty()) return;
      }
      at_block_start_ = false;
      out.content += buf_;
      buf_.clear();
      return;
    }
    // kReasoning
    if (at_block_start_) {
      if (opt_.trim_newlines) {
        size_t i = 0;
        while (i < buf_.size() && buf_[i] == '\n') ++i;
        buf_.erase(0, i);
      }
      // the model may repeat the <think> the prompt already opened: drop it
      if (buf_.starts_with(kOpen)) {
        buf_.erase(0, kOpen.size());
        continue;
      }
      if (buf_.empty()) return;
      if (!final && proper_prefix(buf_, kOpen)) return;  // maybe a repeated <think>
    }
    Scan s = scan_reasoning(buf_, opt_.tool_call_ends_reasoning, final);
    std::string_view head = std::string_view(buf_).substr(0, s.pos);
    if (s.event == Scan::kNone) {
      // hold trailing newlines: they are dropped if </think> follows
      size_t keep = head.size();
      if (opt_.trim_newlines)
        while (keep > 0 && head[keep - 1] == '\n') --keep;
      if (final) {
        out.reasoning += head.substr(0, keep);
        buf_.clear();
        return;
      }
      if (keep > 0) {
        out.reasoning += head.substr(0, keep);
        at_block_start_ = false;
        buf_.erase(0, keep);
      }
      return;
    }
    if (opt_.trim_newlines)
      while (!head.empty() && head.back() == '\n') head.remove_suffix(1);
    out.reasoning += head;
    ended_ = true;
    if (s.event == Scan::kClose) {
      buf_.erase(0, s.pos + kClose.size());
      at_block_start_ = true;
    } else {
      buf_.erase(0, s.pos);  // the tool call is content
      at_block_start_ = false;
    }
    state_ = State::kContent;
  }
}

}  // namespace ninfer
