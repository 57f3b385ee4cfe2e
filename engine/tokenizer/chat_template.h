// Owns chat-template rendering (messages + tools -> prompt text and segments): native Qwen3.5 or the Jinja interpreter.
#pragma once

#include <ctime>
#include <memory>
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
  // Jinja templates only (the native renderer ignores these):
  // the template kwargs bos_token / eos_token, as transformers passes the tokenizer's special tokens; unset: the
  // template sees them undefined (artifacts do not store them yet; callers may fill them from the tokenizer).
  std::optional<std::string> bos_token, eos_token;
  // More template kwargs (chat_template_kwargs of a request), a JSON object; they override the options above.
  nlohmann::ordered_json extra_kwargs;
  // What strftime_now() formats (seconds since the epoch, local time); unset: the current time.
  std::optional<std::time_t> now;
};

// The output of a rendering: the segments concatenate to the prompt text that the official jinja template renders.
struct RenderedPrompt {
  std::vector<PromptSegment> segments;  // template text (allow_special) and message data (plain)
  // The generation prompt leaves a <think> block open. Jinja templates: add_generation_prompt is on and the text,
  // without trailing whitespace, ends with "<think>".
  bool thinking = false;
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
//
// Any other template text is run by ninfer's Jinja interpreter (engine/tokenizer/jinja), byte for byte as
// transformers' apply_chat_template renders it: messages are normalised as transformers does (keys whose value is
// null dropped; reasoning_content / thinking / reasoning aliased to each other), the variables are messages,
// tools, documents (None), add_generation_prompt, bos_token/eos_token when set, enable_thinking when set,
// add_vision_id when true, and extra_kwargs. Template literal text becomes allow_special segments and values from
// the request become plain segments (see jinja::Template for the exact rule).
class ChatTemplate {
 public:
  enum class Kind {
    kQwen35,                    // Qwen3.5 template: thinking on unless enable_thinking=false
    kQwen35ThinkingOffDefault,  // small Qwen3.5 checkpoints: thinking only with enable_thinking=true
    kJinja,                     // the artifact's own template, run by the Jinja interpreter
  };

  explicit ChatTemplate(Kind kind = Kind::kQwen35) : kind_(kind) {}

  // Picks the renderer for a template text stored in an artifact: the native one for the two known Qwen3.5
  // templates, else kJinja. A text that does not parse is logged; render() then throws its syntax error
  // (kInvalidArgument, "chat template line N: ...") and recognized() is false.
  static ChatTemplate from_template_text(std::string_view jinja);
  // The Jinja interpreter for any text, known Qwen3.5 templates included (tests prove the fast path identical).
  static ChatTemplate interpreted(std::string_view jinja);

  // Throws ninfer::Error(kInvalidArgument) with the template's own message for conversations it rejects
  // ("No user query found in messages.", "System message must be at the beginning.", ...); kJinja messages
  // start with "chat template line N: ".
  RenderedPrompt render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                        const ChatOptions& options) const;

  Kind kind() const { return kind_; }
  bool recognized() const { return recognized_; }
  // A one-line description, e.g. for the startup log.
  std::string description() const;
  // Whether the generation prompt thinks under these options. kJinja: renders a one-message probe conversation
  // and applies RenderedPrompt::thinking's rule (enable_thinking, else false, if the probe fails).
  bool thinking_enabled(const ChatOptions& options) const;

 private:
  struct JinjaState;
  RenderedPrompt render_jinja(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                              const ChatOptions& options) const;
  std::string jinja_description() const;
  bool jinja_thinking_enabled(const ChatOptions& options) const;

  Kind kind_;
  bool recognized_ = true;
  std::shared_ptr<const JinjaState> jinja_;  // kJinja: the parsed template or its syntax error
};

}  // namespace ninfer
