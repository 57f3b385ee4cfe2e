// Owns the Qwen3.5 renderer: the official jinja template's control flow, restated over JSON messages.
#include "engine/tokenizer/chat_template.h"

#include <spdlog/spdlog.h>

#include "engine/core/error.h"
#include "engine/tokenizer/py_json.h"

namespace ninfer {
namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kToolsHeader = "# Tools\n\nYou have access to the following functions:\n\n<tools>";
constexpr std::string_view kToolsFooter =
    "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
    "<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n"
    "</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified "
    "format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n"
    "- Required parameters MUST be specified\n- You may provide optional reasoning for your function call in natural "
    "language BEFORE the function call, but NOT after\n- If there is no function call available, answer the question "
    "like normal with your current knowledge and do not tell the user about function calls\n</IMPORTANT>";

[[noreturn]] void raise(std::string_view message) { fail(ErrorKind::kInvalidArgument, "{}", message); }

// Accumulates segments, merging neighbours of the same kind.
class Out {
 public:
  void lit(std::string_view s) { add(s, true); }
  void data(std::string_view s) { add(s, false); }
  std::vector<PromptSegment> take() { return std::move(segs_); }

 private:
  void add(std::string_view s, bool special) {
    if (s.empty()) return;
    if (!segs_.empty() && segs_.back().allow_special == special) {
      segs_.back().text += s;
    } else {
      segs_.push_back(PromptSegment{std::string(s), special});
    }
  }
  std::vector<PromptSegment> segs_;
};

// Rendered message content as a segment list (vision placeholders are template text).
struct Content {
  std::vector<PromptSegment> segs;
  std::string text;  // concatenation
  void add(std::string_view s, bool special) {
    if (s.empty()) return;
    if (!segs.empty() && segs.back().allow_special == special)
      segs.back().text += s;
    else
      segs.push_back(PromptSegment{std::string(s), special});
    text += s;
  }
};

bool has(const ojson& o, const char* key) { return o.is_object() && o.contains(key); }

bool str_eq(const ojson& o, const char* key, std::string_view v) {
  return has(o, key) && o[key].is_string() && o[key].get_ref<const std::string&>() == v;
}

struct VisionCounters {
  int images = 0;
  int videos = 0;
};

// The template's render_content macro.
Content render_content(const ojson& msg, bool do_vision_count, bool is_system, bool add_vision_id,
                       VisionCounters& counters) {
  Content c;
  if (!has(msg, "content")) return c;
  const ojson& content = msg["content"];
  if (content.is_string()) {
    c.add(content.get_ref<const std::string&>(), false);
  } else if (content.is_array()) {
    for (const auto& item : content) {
      if (!item.is_object()) raise("Unexpected item type in content.");
      if (has(item, "image") || has(item, "image_url") || str_eq(item, "type", "image")) {
        if (is_system) raise("System message cannot contain images.");
        if (do_vision_count) ++counters.images;
        if (add_vision_id) c.add("Picture " + std::to_string(counters.images) + ": ", true);
        c.add("<|vision_start|><|image_pad|><|vision_end|>", true);
      } else if (has(item, "video") || str_eq(item, "type", "video")) {
        if (is_system) raise("System message cannot contain videos.");
        if (do_vision_count) ++counters.videos;
        if (add_vision_id) c.add("Video " + std::to_string(counters.videos) + ": ", true);
        c.add("<|vision_start|><|video_pad|><|vision_end|>", true);
      } else if (has(item, "text")) {
        c.add(py::str(item["text"]), false);
      } else {
        raise("Unexpected item type in content.");
      }
    }
  } else if (!content.is_null()) {
    raise("Unexpected content type.");
  }
  return c;
}

// Python str.strip() applied to rendered content, keeping the segment structure.
Content trim(const Content& c) {
  std::string_view t = py::strip(c.text);
  size_t begin = static_cast<size_t>(t.data() - c.text.data()), end = begin + t.size();
  Content out;
  size_t pos = 0;
  for (const auto& s : c.segs) {
    size_t a = std::max(pos, begin), b = std::min(pos + s.text.size(), end);
    if (a < b) out.add(std::string_view(s.text).substr(a - pos, b - a), s.allow_special);
    pos += s.text.size();
  }
  return out;
}

void emit(Out& out, const Content& c) {
  for (const auto& s : c.segs) {
    if (s.allow_special)
      out.lit(s.text);
    else
      out.data(s.text);
  }
}

std::string_view role_of(const ojson& m) {
  if (has(m, "role") && m["role"].is_string()) return m["role"].get_ref<const std::string&>();
  return {};
}

std::string_view split_first(std::string_view s, std::string_view sep) {
  size_t p = s.find(sep);
  return p == std::string_view::npos ? s : s.substr(0, p);
}
std::string_view split_last(std::string_view s, std::string_view sep) {
  size_t p = s.rfind(sep);
  return p == std::string_view::npos ? s : s.substr(p + sep.size());
}

void render_tool_call(Out& out, const ojson& call_in, bool first, bool content_nonblank) {
  const ojson* call = &call_in;
  if (has(call_in, "function")) call = &call_in["function"];
  if (!has(*call, "name") || !(*call)["name"].is_string()) raise("Tool call without a function name.");
  const std::string& name = (*call)["name"].get_ref<const std::string&>();
  if (first)
    out.lit(content_nonblank ? "\n\n<tool_call>\n<function=" : "<tool_call>\n<function=");
  else
    out.lit("\n<tool_call>\n<function=");
  out.data(name);
  out.lit(">\n");
  if (has(*call, "arguments") && !(*call)["arguments"].is_null()) {
    ojson parsed;
    const ojson* args = &(*call)["arguments"];
    if (args->is_string()) {  // OpenAI wire form: a JSON object in a string
      try {
        parsed = ojson::parse(args->get_ref<const std::string&>());
      } catch (const ojson::exception& e) {
        fail(ErrorKind::kInvalidArgument, "tool call '{}': arguments are not valid JSON: {}", name, e.what());
      }
      args = &parsed;
    }
    if (!args->is_object()) fail(ErrorKind::kInvalidArgument, "tool call '{}': arguments are not an object", name);
    for (const auto& [key, value] : args->items()) {
      out.lit("<parameter=");
      out.data(key);
      out.lit(">\n");
      out.data(value.is_object() || value.is_array() ? py::dumps(value) : py::str(value));
      out.lit("\n</parameter>\n");
    }
  }
  out.lit("</function>\n</tool_call>");
}

}  // namespace

std::string RenderedPrompt::text() const {
  std::string t;
  for (const auto& s : segments) t += s.text;
  return t;
}

ChatTemplate ChatTemplate::from_template_text(std::string_view jinja) {
  auto contains = [&](std::string_view s) { return jinja.find(s) != std::string_view::npos; };
  bool qwen35 = contains("<|im_start|>") && contains("render_content") && contains("last_query_index") &&
                contains("<tool_call>\\n<function=") && contains("<think>\\n") && contains("reasoning_content") &&
                !contains("preserve_thinking");
  if (!qwen35) {
    ChatTemplate t = interpreted(jinja);
    if (t.recognized_)
      spdlog::info("chat template ({} bytes): {}", jinja.size(), t.description());
    return t;
  }
  ChatTemplate t(Kind::kQwen35);
  if (contains("enable_thinking is defined and enable_thinking is true")) t.kind_ = Kind::kQwen35ThinkingOffDefault;
  spdlog::info("chat template recognised: {}", t.description());
  return t;
}

std::string ChatTemplate::description() const {
  if (kind_ == Kind::kJinja) return jinja_description();
  return kind_ == Kind::kQwen35 ? "Qwen3.5 ChatML renderer (thinking on by default)"
                                : "Qwen3.5 ChatML renderer (thinking off by default)";
}

bool ChatTemplate::thinking_enabled(const ChatOptions& o) const {
  if (kind_ == Kind::kJinja) return jinja_thinking_enabled(o);
  if (kind_ == Kind::kQwen35) return !(o.enable_thinking.has_value() && !*o.enable_thinking);
  return o.enable_thinking.has_value() && *o.enable_thinking;
}

RenderedPrompt ChatTemplate::render(const ojson& messages, const ojson& tools, const ChatOptions& options) const {
  if (kind_ == Kind::kJinja) return render_jinja(messages, tools, options);
  if (!messages.is_array() || messages.empty()) raise("No messages provided.");
  for (const auto& m : messages)
    if (!m.is_object()) raise("Unexpected message role.");
  Out out;
  VisionCounters counters;
  VisionCounters scratch;  // render_content calls without vision counting never change counters
  const ojson& first = messages[0];
  const bool first_is_system = role_of(first) == "system";

  if (tools.is_array() && !tools.empty()) {
    out.lit("<|im_start|>system\n");
    out.lit(kToolsHeader);
    for (const auto& tool : tools) {
      out.lit("\n");
      out.data(py::dumps(tool));
    }
    out.lit(kToolsFooter);
    if (first_is_system) {
      Content c = trim(render_content(first, false, true, options.add_vision_id, scratch));
      if (!c.text.empty()) {
        out.lit("\n\n");
        emit(out, c);
      }
    }
    out.lit("<|im_end|>\n");
  } else if (first_is_system) {
    Content c = trim(render_content(first, false, true, options.add_vision_id, scratch));
    out.lit("<|im_start|>system\n");
    emit(out, c);
    out.lit("<|im_end|>\n");
  }

  // last_query_index: the last user message that is not a pure tool response
  const size_t n = messages.size();
  bool multi_step_tool = true;
  size_t last_query_index = n - 1;
  for (size_t k = 0; k < n && multi_step_tool; ++k) {
    size_t index = n - 1 - k;
    const ojson& m = messages[index];
    if (role_of(m) != "user") continue;
    Content c = trim(render_content(m, false, false, options.add_vision_id, scratch));
    std::string_view t = c.text;
    if (!(t.starts_with("<tool_response>") && t.ends_with("</tool_response>"))) {
      multi_step_tool = false;
      last_query_index = index;
    }
  }
  if (multi_step_tool) raise("No user query found in messages.");

  for (size_t i = 0; i < n; ++i) {
    const ojson& m = messages[i];
    const std::string_view role = role_of(m);
    Content content = trim(render_content(m, true, false, options.add_vision_id, counters));
    if (role == "system") {
      if (i != 0) raise("System message must be at the beginning.");
    } else if (role == "user") {
      out.lit("<|im_start|>user\n");
      emit(out, content);
      out.lit("<|im_end|>\n");
    } else if (role == "assistant") {
      std::string reasoning;
      Content body = content;
      // transformers aliases the first non-null of reasoning_content / thinking / reasoning to reasoning_content
      const ojson* r_field = nullptr;
      for (const char* key : {"reasoning_content", "thinking", "reasoning"})
        if (!r_field && has(m, key) && !m[key].is_null()) r_field = &m[key];
      if (r_field && r_field->is_string()) {
        reasoning = r_field->get<std::string>();
      } else if (content.text.find("</think>") != std::string::npos) {
        std::string_view t = content.text;
        reasoning = std::string(
            py::lstrip_char(split_last(py::rstrip_char(split_first(t, "</think>"), '\n'), "<think>"), '\n'));
        body = Content();
        body.add(py::lstrip_char(split_last(t, "</think>"), '\n'), false);
      }
      std::string_view r = py::strip(reasoning);
      if (i > last_query_index) {
        out.lit("<|im_start|>assistant\n<think>\n");
        out.data(r);
        out.lit("\n</think>\n\n");
      } else {
        out.lit("<|im_start|>assistant\n");
      }
      emit(out, body);
      if (has(m, "tool_calls") && m["tool_calls"].is_array() && !m["tool_calls"].empty()) {
        bool nonblank = !py::strip(body.text).empty();
        bool first_call = true;
        for (const auto& call : m["tool_calls"]) {
          render_tool_call(out, call, first_call, nonblank);
          first_call = false;
        }
      }
      out.lit("<|im_end|>\n");
    } else if (role == "tool") {
      if (i > 0 && role_of(messages[i - 1]) != "tool") out.lit("<|im_start|>user");
      out.lit("\n<tool_response>\n");
      emit(out, content);
      out.lit("\n</tool_response>");
      if (i + 1 == n || role_of(messages[i + 1]) != "tool") out.lit("<|im_end|>\n");
    } else {
      raise("Unexpected message role.");
    }
  }

  RenderedPrompt prompt;
  if (options.add_generation_prompt) {
    prompt.thinking = thinking_enabled(options);
    out.lit(prompt.thinking ? "<|im_start|>assistant\n<think>\n" : "<|im_start|>assistant\n<think>\n\n</think>\n\n");
  }
  prompt.segments = out.take();
  return prompt;
}

}  // namespace ninfer
