// Owns ChatTemplate's Jinja-backed kind: transformers' input normalisation, template kwargs and segment mapping.
#include <spdlog/spdlog.h>

#include "engine/core/error.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/jinja/template.h"
#include "engine/tokenizer/py_json.h"

namespace ninfer {

using ojson = nlohmann::ordered_json;

struct ChatTemplate::JinjaState {
  std::optional<jinja::Template> tpl;  // nullopt: the text did not parse
  std::string syntax_error;
  size_t bytes = 0;
};

namespace {

// transformers' _normalize_chat_messages + _alias_reasoning_fields: drop the null-valued keys of each message, then
// give reasoning_content, thinking and reasoning's first non-null value under "thinking" (first key) and
// "reasoning_content" (its key, else last).
ojson normalize_messages(const ojson& messages) {
  ojson out = ojson::array();
  for (const auto& m : messages) {
    if (!m.is_object())
      fail(ErrorKind::kInvalidArgument, "Chat messages should be dicts, dataclasses or pydantic models, but got {}",
           py::dumps(m));
    ojson clean = ojson::object();
    for (const auto& [k, v] : m.items())
      if (!v.is_null()) clean[k] = v;
    const ojson* reasoning = nullptr;
    for (const char* key : {"reasoning_content", "thinking", "reasoning"})
      if (!reasoning && clean.contains(key)) reasoning = &clean[key];
    if (reasoning) {
      ojson r = *reasoning;
      ojson aliased = ojson::object();
      aliased["thinking"] = r;
      for (const auto& [k, v] : clean.items()) aliased[k] = v;
      aliased["reasoning_content"] = r;
      clean = std::move(aliased);
    }
    out.push_back(std::move(clean));
  }
  return out;
}

bool ends_in_open_think(const std::string& text) {
  std::string_view t = text;
  while (!t.empty() && (t.back() == ' ' || t.back() == '\n' || t.back() == '\t' || t.back() == '\r')) t.remove_suffix(1);
  return t.ends_with("<think>");
}

}  // namespace

ChatTemplate ChatTemplate::interpreted(std::string_view jinja) {
  ChatTemplate t(Kind::kJinja);
  auto state = std::make_shared<JinjaState>();
  state->bytes = jinja.size();
  try {
    state->tpl.emplace(jinja);
  } catch (const Error& e) {
    state->syntax_error = e.what();
    t.recognized_ = false;
    spdlog::error("chat template ({} bytes) does not parse: {}; chat requests will fail with this error",
                  jinja.size(), e.what());
  }
  t.jinja_ = std::move(state);
  return t;
}

std::string ChatTemplate::jinja_description() const {
  if (!jinja_ || !jinja_->tpl) return "Jinja chat template (syntax error)";
  return "Jinja chat template interpreter (" + std::to_string(jinja_->bytes) + " bytes)";
}

RenderedPrompt ChatTemplate::render_jinja(const ojson& messages, const ojson& tools, const ChatOptions& options) const {
  if (!jinja_) fail(ErrorKind::kInternal, "Jinja chat template without a template");
  if (!jinja_->tpl) throw Error(ErrorKind::kInvalidArgument, jinja_->syntax_error);
  if (!messages.is_array() || messages.empty())
    fail(ErrorKind::kInvalidArgument, "Cannot apply chat template to an empty conversation. Provide at least one message.");
  ojson ctx = ojson::object();
  ctx["messages"] = normalize_messages(messages);
  ctx["tools"] = tools.is_null() ? ojson() : tools;
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = options.add_generation_prompt;
  if (options.bos_token) ctx["bos_token"] = *options.bos_token;
  if (options.eos_token) ctx["eos_token"] = *options.eos_token;
  if (options.enable_thinking) ctx["enable_thinking"] = *options.enable_thinking;
  if (options.add_vision_id) ctx["add_vision_id"] = true;
  if (options.extra_kwargs.is_object())
    for (const auto& [k, v] : options.extra_kwargs.items()) ctx[k] = v;
  else if (!options.extra_kwargs.is_null())
    fail(ErrorKind::kInvalidArgument, "chat_template_kwargs must be a JSON object");

  jinja::Text text = jinja_->tpl->render(ctx, jinja::Limits{}, options.now);
  RenderedPrompt prompt;
  size_t begin = 0;
  for (const auto& [end, plain] : text.runs()) {
    prompt.segments.push_back(PromptSegment{text.str().substr(begin, end - begin), !plain});
    begin = end;
  }
  prompt.thinking = options.add_generation_prompt && ends_in_open_think(text.str());
  return prompt;
}

bool ChatTemplate::jinja_thinking_enabled(const ChatOptions& options) const {
  ChatOptions probe = options;
  probe.add_generation_prompt = true;
  try {
    ojson messages = ojson::array({ojson{{"role", "user"}, {"content", "Hi"}}});
    return render_jinja(messages, ojson(), probe).thinking;
  } catch (const Error&) {
    return options.enable_thinking.value_or(false);
  }
}

}  // namespace ninfer
