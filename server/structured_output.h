// Owns structured output in the server: the request's response_format, and the constraint each request's output runs
// under (a JSON Schema, any JSON object, or a forced tool call), with compiled grammars shared across requests.
#pragma once

#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/constrain/grammar_constraint.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/engine_port.h"

namespace ninfer::server {

// Parses the value of a chat request's "response_format" ({"type": "text" | "json_object" | "json_schema", …}).
// Throws ApiException (400) naming the field: a wrong shape, or a schema structured output does not support (the
// message names the keyword and where it is, e.g. "unsupported JSON Schema keyword 'pattern' at /properties/id").
ResponseFormat parse_response_format(const nlohmann::ordered_json& value);

// Builds each request's output constraint. Grammars are compiled once per distinct schema / tool set and kept (least
// recently used dropped), so their token masks are computed once: by the shared mask workers (MaskWorkers) ahead of
// use when the grammar is new, and in the step for a mask the workers have not reached yet (requests never wait for
// the whole precomputation); the vocabulary is sorted on first use.
class StructuredOutput {
 public:
  static constexpr size_t kMaxGrammars = 16;  // each keeps up to 256 state masks (7.8 MB at 248k tokens)

  // `end_ids`: the tokens that end an answer (allowed where the grammar is complete).
  StructuredOutput(const Tokenizer& tokenizer, std::vector<int32_t> end_ids);

  // The constraint of one request, or null when its output is free. `opened_reasoning`: the prompt leaves a <think>
  // block open, so the grammar starts after </think>. Throws ApiException (400) for what cannot be constrained.
  std::shared_ptr<LogitConstraint> constraint(const GenerationRequest& request, ToolCallFormat format,
                                              bool opened_reasoning);

 private:
  std::shared_ptr<constrain::CompiledGrammar> compiled(const std::string& key,
                                                       const std::function<constrain::Grammar()>& make);

  const Tokenizer& tokenizer_;
  std::vector<int32_t> end_ids_;
  std::optional<int32_t> think_end_;
  std::mutex mu_;
  std::shared_ptr<const constrain::TokenVocabulary> vocab_;
  std::list<std::pair<std::string, std::shared_ptr<constrain::CompiledGrammar>>> grammars_;  // most recent first
};

}  // namespace ninfer::server
