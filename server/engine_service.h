// Owns the adapter from the HTTP layer's EnginePort to the token-level Engine: chat template, tokenizer,
// streaming detokenizer, reasoning split, stop strings, the reasoning budget and the output constraint, per request.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/runtime/engine.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/reasoning_budget.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/engine_port.h"
#include "server/structured_output.h"

namespace ninfer::server {

struct EngineServiceConfig {
  ModelInfo info;                    // name, max_context, defaults, settings (as reported to clients)
  std::vector<int32_t> stop_ids;     // end-of-generation ids (generation_config eos + <|im_end|>)
  ReasoningBudgets budgets;          // reasoning_effort → budget
  std::optional<int64_t> default_reasoning_budget;  // --reasoning-budget N (caps reasoning_effort budgets)
  // The artifact's default (generation config reasoning_budget): used when neither the request's reasoning_effort nor
  // --reasoning-budget gives one; unset after --reasoning-budget -1. resolve_reasoning_budget has the order.
  std::optional<int64_t> artifact_reasoning_budget;
};

class EngineService final : public EnginePort {
 public:
  // `engine` and `tokenizer` must outlive the service. Throws Error(kInvalidArgument) when the engine may produce an
  // id the tokenizer lacks (build it with EngineOptions::output_ids = tokenizer_output_ids(...)).
  EngineService(Engine& engine, const Tokenizer& tokenizer, ChatTemplate chat_template, EngineServiceConfig config);

  bool ready() const override { return true; }
  ModelInfo model_info() const override { return config_.info; }
  EngineLoad load() const override;
  SubmitResult submit(GenerationRequest request, std::shared_ptr<GenerationSink> sink) override;
  void cancel(RequestHandle handle) override;
  std::vector<int32_t> tokenize(const GenerationRequest& request) const override;
  std::string detokenize(const std::vector<int32_t>& ids) const override;

  // Token ids of the prompt a request would run (template applied); throws Error(kInvalidArgument).
  struct Prompt {
    std::vector<int32_t> ids;
    bool opened_reasoning = false;  // the prompt ends inside an open <think> block
    bool thinking = false;          // thinking enabled for this request
  };
  Prompt build_prompt(const GenerationRequest& request) const;

 private:
  Engine& engine_;
  const Tokenizer& tokenizer_;
  ChatTemplate template_;
  EngineServiceConfig config_;
  StructuredOutput structured_;  // after config_: built from its stop ids
};

// The end-of-generation ids generation_config.json names (eos_token_id, an int or a list): all an artifact without a
// tokenizer has.
std::vector<int32_t> generation_stop_ids(const nlohmann::json& generation_config);
// The default end-of-generation ids of an artifact: generation_config.eos_token_id (int or list) plus
// the tokenizer's <|im_end|> and <|endoftext|> when present.
std::vector<int32_t> default_stop_ids(const nlohmann::json& generation_config, const Tokenizer& tokenizer);
// Sampling defaults from generation_config.json (temperature, top_p, top_k, min_p, repetition_penalty).
SamplingParams default_sampling(const nlohmann::json& generation_config);
// EngineOptions::output_ids for a model of `vocab_size` ids and this tokenizer: 1 for the ids the tokenizer has,
// 0 for the rest (padded embedding rows, gaps). Empty when the tokenizer has every id below vocab_size.
std::vector<uint8_t> tokenizer_output_ids(const Tokenizer& tokenizer, int64_t vocab_size);

}  // namespace ninfer::server
