// Owns compiling JSON Schema (the subset structured output supports) and free-form JSON into a Grammar.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/constrain/grammar.h"

namespace ninfer::constrain {

// The JSON text the grammars produce: compact, except for one optional space after ':' and ','. Objects list their
// schema properties in schema order (optional ones may be left out); strings are valid UTF-8 with JSON escapes;
// numbers have at most 16 integer digits, 16 fraction digits and 2 exponent digits. Up to four whitespace bytes may
// precede the top-level value.
//
// Supported keywords: type (one or a list), enum and const (alone or with type: the values of that type), properties, required, additionalProperties (false, true or
// a schema; with properties, only the listed ones are produced, which every additionalProperties allows), items, minItems, maxItems (≤ 64), minLength, maxLength (≤ 256), anyOf, oneOf (as anyOf: exact when the
// branches do not overlap), allOf with one branch, $ref to "#", "#/$defs/…" or "#/definitions/…" (recursion
// allowed), and the annotations title, description, default, examples, $schema, $id, $comment, deprecated,
// readOnly, writeOnly. Anything else is refused: compile throws Error(kInvalidArgument) naming the keyword and its
// JSON pointer, e.g. "unsupported JSON Schema keyword 'pattern' at /properties/name".
class JsonGrammar {
 public:
  // A grammar for any JSON value whose top level is an object (response_format json_object).
  static Grammar any_object();
  // A grammar for the instances of `schema`.
  static Grammar from_schema(const nlohmann::ordered_json& schema);

  // Builds JSON rules into a grammar that has other rules too (tool-call formats): the Expr for one schema, or for
  // any value. The grammar must be the same object across calls.
  explicit JsonGrammar(Grammar& grammar, const nlohmann::ordered_json* root_schema = nullptr);
  Expr schema(const nlohmann::ordered_json& schema, const std::string& pointer);
  Expr any_value();
  Expr string_value();  // any JSON string

 private:
  Expr object_of(const nlohmann::ordered_json& s, const std::string& ptr);
  Expr array_of(const nlohmann::ordered_json& s, const std::string& ptr);
  Expr string_of(const nlohmann::ordered_json& s, const std::string& ptr);
  Expr typed(const std::string& type, const nlohmann::ordered_json& s, const std::string& ptr);
  Expr ref(const std::string& target, const std::string& ptr);
  uint32_t basic(const char* name);

  Grammar& g_;
  const nlohmann::ordered_json* root_;
  std::map<std::string, uint32_t> rules_;  // basic rules and $ref targets by name
};

}  // namespace ninfer::constrain
