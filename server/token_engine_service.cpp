#include "server/token_engine_service.h"

#include <algorithm>

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/engine_conversions.h"

namespace ninfer::server {

namespace {

// Hands one request's output ids to its sink as text-less deltas (engine thread).
class TokenBridge final : public RequestObserver {
 public:
  TokenBridge(std::shared_ptr<GenerationSink> sink, std::vector<int32_t> stop_ids, EngineSettings settings)
      : sink_(std::move(sink)), stop_ids_(std::move(stop_ids)), settings_(std::move(settings)) {}

  void on_tokens(std::span<const OutputToken> tokens) override {
    Delta d{Channel::kContent, {}, static_cast<int32_t>(tokens.size()), {}};
    for (const OutputToken& t : tokens)
      if (std::find(stop_ids_.begin(), stop_ids_.end(), t.token.id) == stop_ids_.end()) d.token_ids.push_back(t.token.id);
    sink_->on_delta(std::move(d));
  }

  void on_finish(const RequestResult& r) override { sink_->on_finish(final_result(r, settings_)); }

 private:
  std::shared_ptr<GenerationSink> sink_;
  std::vector<int32_t> stop_ids_;
  EngineSettings settings_;
};

}  // namespace

TokenEngineService::TokenEngineService(Engine& engine, EngineServiceConfig config)
    : engine_(engine), config_(std::move(config)) {
  config_.info.has_tokenizer = false;
  config_.info.tool_call_format = ToolCallFormat::kNone;
}

EngineLoad TokenEngineService::load() const { return engine_load(engine_); }

SubmitResult TokenEngineService::submit(GenerationRequest request, std::shared_ptr<GenerationSink> sink) {
  if (request.kind != PromptKind::kTokens) {
    const ApiError e = no_tokenizer(request.kind == PromptKind::kChat ? "messages" : "prompt");
    return {0, RejectKind::kInvalid, e.message, *e.param, 0};
  }
  const int64_t vocab = engine_.config().vocab_size;
  for (const auto& [id, bias] : request.sampling.logit_bias)
    if (id >= vocab)
      return {0, RejectKind::kInvalid,
              fmt::format("logit_bias names token id {}, which is not a token of this model (0..{}).", id, vocab - 1),
              "logit_bias", 0};
  EngineRequest er;
  er.prompt = request.prompt_tokens;
  er.sampling = to_engine(request.sampling);
  er.max_tokens = request.max_tokens.value_or(0);
  er.stop_ids = config_.stop_ids;
  auto bridge = std::make_shared<TokenBridge>(std::move(sink), config_.stop_ids, config_.info.settings);
  SubmitResult out = submit_result(engine_.submit(std::move(er), bridge), static_cast<int64_t>(request.prompt_tokens.size()));
  if (out.reject == RejectKind::kContextLength || out.reject == RejectKind::kInvalid) out.param = "prompt";
  return out;
}

void TokenEngineService::cancel(RequestHandle handle) { engine_.cancel(handle); }

std::vector<int32_t> TokenEngineService::tokenize(const GenerationRequest&) const {
  throw ApiException(no_tokenizer(std::nullopt));
}

std::string TokenEngineService::detokenize(const std::vector<int32_t>&) const {
  throw ApiException(no_tokenizer(std::nullopt));
}

}  // namespace ninfer::server
