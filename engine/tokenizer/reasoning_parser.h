// Owns splitting generated text into reasoning and answer content (<think>…</think>), streaming or at once.
#pragma once

#include <string>
#include <string_view>

namespace ninfer {

struct ReasoningDelta {
  std::string reasoning;  // goes to reasoning_content
  std::string content;    // goes to content
  bool empty() const { return reasoning.empty() && content.empty(); }
};

struct ReasoningParserOptions {
  // The prompt ends inside an open <think> block (Qwen3.5 generation prompt with thinking on): the output starts
  // as reasoning. When false, reasoning starts only if the output itself begins with <think> (after whitespace).
  bool prompt_opened_reasoning = true;
  // Thinking disabled for this request (the prompt already holds "<think>\n\n</think>\n\n"): all output is content.
  bool thinking_enabled = true;
  // An unclosed reasoning block also ends at "<tool_call>" followed by optional whitespace and "<function"
  // (vLLM's qwen3 rule): the tool call and what follows are content.
  bool tool_call_ends_reasoning = true;
  // Drop the newlines that the template puts around the block: at the start of reasoning, right before
  // </think>, and right after it. Off: the text is split exactly at the tags.
  bool trim_newlines = true;
};

// Incremental parser. feed() takes the text that the Detokenizer emits (whole characters); the concatenation of
// all deltas of feed()… and finish() equals parse() of the whole text, whatever the chunking. Text that might be
// the start of a tag ("</thi") is held until it is decided.
class ReasoningParser {
 public:
  explicit ReasoningParser(ReasoningParserOptions options = {});

  ReasoningDelta feed(std::string_view text);
  // End of generation: held text is released (an unfinished tag is ordinary text).
  ReasoningDelta finish();

  // At once.
  static ReasoningDelta parse(std::string_view text, const ReasoningParserOptions& options);

  bool in_reasoning() const { return state_ == State::kReasoning; }
  // True once the reasoning block closed (by </think> or an implicit tool call).
  bool reasoning_ended() const { return ended_; }

 private:
  enum class State { kStart, kReasoning, kContent };
  void run(ReasoningDelta& out, bool final);

  ReasoningParserOptions opt_;
  State state_;
  bool at_block_start_ = true;  // nothing emitted in the current part yet (leading newlines are dropped)
  bool ended_ = false;
  std::string buf_;
};

}  // namespace ninfer
