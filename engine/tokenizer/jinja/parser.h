// Owns the chat-template parser: tokens -> statement tree, with jinja2's operator precedence.
#pragma once

#include <string_view>

#include "engine/tokenizer/jinja/ast.h"

namespace ninfer::jinja {

// Parses a template. Supported statements: if/elif/else, for (tuple targets, `if` filter, else, break/continue),
// set (names, tuples, namespace attributes, block set), macro, call blocks, filter blocks and transformers'
// generation blocks. Anything else (extends, include, import, block, raw, with, ...) is refused.
// Throws ninfer::Error(kInvalidArgument) "chat template line N: ..." on a syntax error.
Body parse(std::string_view source);

}  // namespace ninfer::jinja
