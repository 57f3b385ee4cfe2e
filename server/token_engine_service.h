// Owns the EnginePort adapter for an artifact without tokenizer.json: token-id prompts in, token ids out, no text.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/runtime/engine.h"
#include "server/engine_port.h"
#include "server/engine_service.h"

namespace ninfer::server {

// The model can only be driven with token ids (docs/api.md "Artifacts without a tokenizer"): submit() takes kTokens
// prompts, and every output Delta has empty text and the output ids in Delta::token_ids (the end-of-generation id
// that ends a request is counted, not listed). model_info().has_tokenizer is false, so the HTTP layer refuses what
// needs text (chat, string prompts, stop strings, logprobs, /tokenize, /detokenize) before it gets here.
class TokenEngineService final : public EnginePort {
 public:
  // `engine` must outlive the service; config.stop_ids from generation_stop_ids() (engine_service.h).
  TokenEngineService(Engine& engine, EngineServiceConfig config);

  bool ready() const override { return true; }
  ModelInfo model_info() const override { return config_.info; }
  EngineLoad load() const override;
  SubmitResult submit(GenerationRequest request, std::shared_ptr<GenerationSink> sink) override;
  void cancel(RequestHandle handle) override;
  // Both throw ApiException 400 (code model_has_no_tokenizer).
  std::vector<int32_t> tokenize(const GenerationRequest& request) const override;
  std::string detokenize(const std::vector<int32_t>& ids) const override;

 private:
  Engine& engine_;
  EngineServiceConfig config_;
};

}  // namespace ninfer::server
