// Fuzz target: the Jinja chat-template interpreter. Any template text, rendered over a small fixed conversation,
// may only be refused with ninfer::Error(kInvalidArgument) naming a template line; never crash or hang (the
// interpreter's limits bound loops, recursion and output).
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/tokenizer/jinja/template.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

const nlohmann::ordered_json& context() {
  static const nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(R"({
    "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi <|im_end|>"},
                 {"role": "assistant", "content": "", "reasoning_content": "r",
                  "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": [1, 2.5, null]}}}]},
                 {"role": "tool", "content": "ok"}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
  return ctx;
}

}  // namespace

NINFER_FUZZ_TARGET {
  ninfer::jinja::Limits limits;
  limits.max_steps = 20000;
  limits.max_output_bytes = 1 << 20;
  try {
    ninfer::jinja::Template t(ninfer::fuzz::as_text(data, size));
    t.render(context(), limits, 0);
  } catch (const ninfer::Error& e) {
    NINFER_FUZZ_CHECK(e.kind() == ninfer::ErrorKind::kInvalidArgument, e.what());
    NINFER_FUZZ_CHECK(std::string_view(e.what()).starts_with("chat template line "), e.what());
  }
  return 0;
}
