// Owns the native Qwen3.5 ChatML chat-template renderer (messages + tools -> prompt text and segments).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace ninfer {

// Options of one rendering: the template kwargs of transformers' apply_chat_template.
struct ChatOptions {
  bool add_generation_prompt = true;
  // nullopt: the template's default (thinking on for kQwen35, off for kQwen35ThinkingOffDefault).
  std::optional<bool> enable_thinking;
  bool add_vision_id = false;  // "Picture N: " / "Video N: " before vision placeholders
};

// The output of a rendering: the segments concatenate to the prompt text that the official jinja template renders.
struct RenderedPrompt {
  std::vector<PromptSegment> segments;  // template text (allow_special) and message data (plain)
  bool thinking = false;                // the generation prompt leaves a <think> block open
  std::string text() const;
};

// Renders Qwen3.5 prompts natively, byte for byte as the official Qwen3.5 jinja chat template does under
// transformers' apply_chat_template: system first, user/assistant/tool turns, reasoning of assistant turns after
// the last user query kept as <think>…</think> (earlier ones dropped), consecutive tool results merged into one
// user turn, tool definitions and Qwen3-Coder XML tool calls, vision placeholders, and the generation prompt with
// thinking on (`<think>\n`) or off (`<think>\n\n</think>\n\n`).
//
// Input is OpenAI-shaped JSON. Use nlohmann::ordered_json so object keys keep their order: tool schemas and
// object arguments are rendered with Python's json.dumps in insertion order. Deviations from the jinja template,
// all for input it cannot render: tool-call `arguments` given as a JSON string (the OpenAI wire form) are parsed
// as a JSON object; non-object items in a content list are rejected.
//
// Message text goes into plain segments, so control-token strings typed by a user stay plain text once encoded
// with Tokenizer::encode_segments().
class ChatTemplate {
 public:
  enum class Kind {
    kQwen35,                    // Qwen3.5 template: thinking on unless enable_thinking=false
    kQwen35ThinkingOffDefault,  // small Qwen3.5 checkpoints: thinking only with enable_thinking=true
  };

  explicit ChatTemplate(Kind kind = Kind::kQwen35) : kind_(kind) {}

  // Picks the renderer for a template text stored in an artifact. A text that is not a known Qwen3.5 template
  // is logged as a warning that names the renderer used (kQwen35); `recognized()` tells which case it was.
  static ChatTemplate from_template_text(std::string_view jinja);

  // Throws ninfer::Error(kInvalidArgument) with the template's own message for conversations it rejects
  // ("No user query found in messages.", "System message must be at the beginning.", ...).
  RenderedPrompt render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                        const ChatOptions& options) const;

  Kind kind() const { return kind_; }
  bool recognized() const { return recognized_; }
  // A one-line description, e.g. for the startup log.
  std::string description() const;
  // Whether the generation prompt thinks under these options.
  bool thinking_enabled(const ChatOptions& options) const;

 private:
  Kind kind_;
  bool recognized_ = true;
};

}  // namespace ninfer
