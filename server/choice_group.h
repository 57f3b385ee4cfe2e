// Owns the submission of one HTTP request's n choices to the engine: each choice's seed, choice 0 first and the rest
// once its prompt is in (so they start from its cached prefix), and cancelling every choice.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "server/engine_port.h"
#include "server/request_stream.h"

namespace ninfer::server {

// The seed of choice `index` of a request seeded with `seed`: the seed itself for choice 0 (so n = 1 and the first of
// n choices agree), else splitmix64(seed + index · 0x9E3779B97F4A7C15). docs/api.md states it.
uint64_t choice_seed(uint64_t seed, int index);

// Choice `index` of `request`: the same request, its seed derived as above when the request has one (without one,
// every choice samples with its own randomness).
GenerationRequest choice_request(const GenerationRequest& request, int index);

// Thread-safe. The stream must have as many choices as the group.
class ChoiceGroup {
 public:
  // `stagger`: submit choice 0 alone first, the rest once it has output (its prompt is prefilled and in the prefix
  // cache); false (no prefix reuse, or n = 1): all at once.
  ChoiceGroup(GenerationRequest request, int n, bool stagger, std::shared_ptr<RequestStream> stream);

  // Submits choice 0 (all choices when not staggered). A refusal is returned and nothing runs.
  SubmitResult start(EnginePort& engine);
  // Submits the choices still held back once choice 0 has output or has finished. When the engine refuses one, the
  // choices already running are cancelled and the refusal is returned.
  std::optional<SubmitResult> pump(EnginePort& engine);
  // Cancels every submitted choice; those not submitted never will be.
  void cancel(EnginePort& engine);

  int size() const { return n_; }

 private:
  SubmitResult submit_locked(EnginePort& engine, int index);  // under mu_
  void cancel_locked(EnginePort& engine, std::optional<SubmitResult> refusal = std::nullopt);

  GenerationRequest request_;
  int n_;
  bool stagger_;
  std::shared_ptr<RequestStream> stream_;
  std::mutex mu_;
  std::vector<RequestHandle> handles_;  // of the submitted choices, in index order
  bool closed_ = false;                 // cancelled or refused: nothing more is submitted
};

}  // namespace ninfer::server
