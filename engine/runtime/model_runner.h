// Owns turning "these sequences bring these tokens" into one ForwardBatch and running the model on it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/linear_state.h"

namespace ninfer {

// One sequence's share of a step: `tokens` continue the sequence from position `start` (the number of
// tokens it already has in the cache). `all_logits` asks for every new token's logits, else the last one's.
struct SequenceStep {
  SeqId id = 0;
  int32_t state_slot = 0;
  int64_t start = 0;
  std::span<const int32_t> tokens;
  bool all_logits = false;
};

class ModelRunner {
 public:
  ModelRunner(Model& model, KvCache& kv, LinearStateCache& state) : model_(model), kv_(kv), state_(state) {}

  // Reserves KV for every sequence (throws Error(kOutOfMemory) when the pool runs out, before any work),
  // runs one forward, and returns the requested logits, row-major [rows, vocab], in step order.
  std::span<const float> step(std::span<const SequenceStep> steps);

  Model& model() { return model_; }
  KvCache& kv() { return kv_; }
  LinearStateCache& state() { return state_; }

 private:
  Model& model_;
  KvCache& kv_;
  LinearStateCache& state_;
  // Reused between steps so a decode step allocates nothing.
  std::vector<int32_t> tokens_, positions_, q_start_, seq_len_, slots_, table_, kv_slots_, rows_;
  std::vector<float> logits_;
};

}  // namespace ninfer
