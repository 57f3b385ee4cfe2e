// Owns the EnginePort the HTTP server answers from while the model loads: not ready (GET /health 503,
// generation 503) until the loaded engine is attached, then a pass-through to it.
#pragma once

#include <atomic>

#include "server/api_error.h"
#include "server/engine_port.h"

namespace ninfer::server {

class DeferredEngine final : public EnginePort {
 public:
  // Called once, from the loading thread; `engine` must outlive every later call.
  void attach(EnginePort* engine) { target_.store(engine, std::memory_order_release); }

  bool ready() const override { return target() != nullptr; }
  ModelInfo model_info() const override { return target() ? target()->model_info() : ModelInfo{}; }
  EngineLoad load() const override { return target() ? target()->load() : EngineLoad{}; }
  SubmitResult submit(GenerationRequest request, std::shared_ptr<GenerationSink> sink) override {
    if (EnginePort* t = target()) return t->submit(std::move(request), std::move(sink));
    return {0, RejectKind::kNotReady, "the model is still loading", "", 0};
  }
  void cancel(RequestHandle handle) override {
    if (EnginePort* t = target()) t->cancel(handle);
  }
  // The HTTP layer answers 503 while !ready(), so these only run once the engine is attached.
  std::vector<int32_t> tokenize(const GenerationRequest& request) const override { return loaded().tokenize(request); }
  std::string detokenize(const std::vector<int32_t>& ids) const override { return loaded().detokenize(ids); }

 private:
  EnginePort* target() const { return target_.load(std::memory_order_acquire); }
  const EnginePort& loaded() const {
    if (EnginePort* t = target()) return *t;
    throw ApiException(service_unavailable("The model is loading.", "model_loading"));
  }
  std::atomic<EnginePort*> target_{nullptr};
};

}  // namespace ninfer::server
