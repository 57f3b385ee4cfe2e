// Fuzz target: chat-template rendering, then encoding the segments. Messages shaped as the engine builds them
// (string role/content/reasoning/name/tool_call_id) may only be refused with ninfer::Error; any JSON (tools,
// tool calls, content lists) may also be refused as a JSON type error, never crash. Control tokens in the encoded
// prompt come only from template text, never from message data.
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/tokenizer/chat_template.h"
#include "tests/fuzz/fuzz_tokenizer_common.h"

namespace {

using nlohmann::ordered_json;

size_t count(const std::vector<int32_t>& ids, int32_t id) { return static_cast<size_t>(std::count(ids.begin(), ids.end(), id)); }

size_t occurrences(const std::string& s, std::string_view what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

void render(const ordered_json& messages, const ordered_json& tools, const ninfer::ChatOptions& opt,
            ninfer::ChatTemplate::Kind kind) {
  const ninfer::Tokenizer& tok = ninfer::fuzz::fuzz_tokenizer().tokenizer;
  const ninfer::RenderedPrompt r = ninfer::ChatTemplate(kind).render(messages, tools, opt);
  const std::vector<int32_t> ids = tok.encode_segments(r.segments);
  for (int32_t id : ids) NINFER_FUZZ_CHECK(id >= 0 && id < tok.vocab_size());
  for (std::string_view control : {"<|im_start|>", "<|im_end|>"}) {
    const std::optional<int32_t> id = tok.token_id(control);
    if (!id) continue;
    size_t in_template = 0;
    for (const auto& s : r.segments)
      if (s.allow_special) in_template += occurrences(s.text, control);
    NINFER_FUZZ_CHECK(count(ids, *id) == in_template, "a control token came from message data");
  }
}

}  // namespace

NINFER_FUZZ_TARGET {
  if (size < 1) return 0;
  ninfer::ChatOptions opt;
  opt.add_generation_prompt = data[0] & 1;
  if (data[0] & 2) opt.enable_thinking = (data[0] & 4) != 0;
  opt.add_vision_id = data[0] & 8;
  const auto kind = data[0] & 16 ? ninfer::ChatTemplate::Kind::kQwen35ThinkingOffDefault : ninfer::ChatTemplate::Kind::kQwen35;
  ordered_json in;
  try {
    in = ordered_json::parse(ninfer::fuzz::as_text(data + 1, size - 1));
  } catch (const ordered_json::exception&) {
    return 0;
  }
  // 1. As the engine builds them (EngineService::build_prompt): strings only.
  if (in.is_array()) {
    ordered_json messages = ordered_json::array();
    for (const auto& m : in) {
      if (!m.is_object()) continue;
      // (m.value("role", "user") would throw on a role that is not a string: the harness must not.)
      ordered_json j = {{"role", m.contains("role") ? m["role"] : ordered_json("user")}, {"content", ""}};
      if (!j["role"].is_string()) j["role"] = "user";
      for (const char* key : {"content", "reasoning_content", "name", "tool_call_id"})
        if (m.contains(key) && m[key].is_string()) j[key] = m[key];
      messages.push_back(std::move(j));
    }
    try {
      render(messages, ordered_json::array(), opt, kind);
    } catch (const ninfer::Error&) {
    }
  }
  // 2. Any JSON: {"messages": ..., "tools": ...}.
  if (in.is_object()) {
    try {
      render(in.value("messages", ordered_json::array()), in.value("tools", ordered_json::array()), opt, kind);
    } catch (const ninfer::Error&) {
    } catch (const ordered_json::exception&) {
    }
  }
  return 0;
}
