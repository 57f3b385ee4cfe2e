// Owns the public face of the chat-template interpreter: parse a Jinja template once, render it many times.
#pragma once

#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "engine/tokenizer/jinja/ast.h"
#include "engine/tokenizer/jinja/interpreter.h"
#include "engine/tokenizer/jinja/value.h"

namespace ninfer::jinja {

// A Hugging Face chat template run by ninfer's interpreter of the Jinja subset these templates use, with the
// environment transformers sets up (trim_blocks, lstrip_blocks, loop controls, the default Undefined, and the
// globals raise_exception, namespace, dict, range, strftime_now; `tojson` is Python's json.dumps with
// ensure_ascii=False, key order kept).
//
// Origins (see Text): literal template text and string literals render as special (may hold control tokens);
// values that come from the render context render as plain. Concatenation keeps both; other string operations
// give plain output when any input was plain. Numbers, booleans, None and containers print as plain text.
//
// Errors: a syntax error (constructor) or a runtime error (render: raise_exception, undefined attribute access,
// type errors, unknown filters, resource limits) throws ninfer::Error(kInvalidArgument) whose message starts with
// "chat template line N: ".
class Template {
 public:
  explicit Template(std::string_view source);

  // `context` must be a JSON object: its keys become the template's variables.
  Text render(const nlohmann::ordered_json& context, const Limits& limits = {},
              std::optional<std::time_t> now = std::nullopt) const;

 private:
  Body body_;
};

}  // namespace ninfer::jinja
