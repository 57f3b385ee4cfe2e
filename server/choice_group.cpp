#include "server/choice_group.h"

#include <fmt/format.h>

namespace ninfer::server {

uint64_t choice_seed(uint64_t seed, int index) {
  if (index == 0) return seed;
  uint64_t z = seed + static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ull;  // splitmix64
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

GenerationRequest choice_request(const GenerationRequest& request, int index) {
  GenerationRequest r = request;
  if (r.sampling.seed) r.sampling.seed = choice_seed(*r.sampling.seed, index);
  return r;
}

ChoiceGroup::ChoiceGroup(GenerationRequest request, int n, bool stagger, std::shared_ptr<RequestStream> stream)
    : request_(std::move(request)), n_(n), stagger_(stagger && n > 1), stream_(std::move(stream)) {}

SubmitResult ChoiceGroup::submit_locked(EnginePort& engine, int index) {
  SubmitResult sr;
  try {
    sr = engine.submit(choice_request(request_, index), stream_->sink(index));
  } catch (const std::exception& e) {
    sr = {};
    sr.reject = RejectKind::kInternal;
    sr.message = fmt::format("The engine failed to accept the request: {}", e.what());
  }
  if (sr.accepted()) handles_.push_back(sr.handle);
  return sr;
}

void ChoiceGroup::cancel_locked(EnginePort& engine, std::optional<SubmitResult> refusal) {
  closed_ = true;
  stream_->close(static_cast<int>(handles_.size()), std::move(refusal));
  for (RequestHandle h : handles_) engine.cancel(h);
}

SubmitResult ChoiceGroup::start(EnginePort& engine) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) {  // cancelled before it started (the server is stopping)
    SubmitResult sr;
    sr.reject = RejectKind::kNotReady;
    sr.message = "The server is shutting down.";
    return sr;
  }
  const int first = stagger_ ? 1 : n_;
  for (int i = 0; i < first; ++i) {
    SubmitResult sr = submit_locked(engine, i);
    if (!sr.accepted()) {
      cancel_locked(engine, sr);
      return sr;
    }
  }
  SubmitResult ok;
  ok.handle = handles_.front();
  return ok;
}

std::optional<SubmitResult> ChoiceGroup::pump(EnginePort& engine) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_ || static_cast<int>(handles_.size()) >= n_ || !stream_->started(0)) return std::nullopt;
  while (static_cast<int>(handles_.size()) < n_) {
    SubmitResult sr = submit_locked(engine, static_cast<int>(handles_.size()));
    if (!sr.accepted()) {
      cancel_locked(engine, sr);
      return sr;
    }
  }
  return std::nullopt;
}

void ChoiceGroup::cancel(EnginePort& engine) {
  std::lock_guard<std::mutex> lock(mu_);
  cancel_locked(engine);
}

}  // namespace ninfer::server
