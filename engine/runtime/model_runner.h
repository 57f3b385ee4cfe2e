// Owns turning "these sequences bring these tokens" into one ForwardBatch and running the model on it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/model.h"
#include "engine/parallel/tp_followers.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/linear_state.h"

namespace ninfer {

// One sequence's share of a step: `tokens` continue the sequence from position `start` (the number of
// tokens it already has in the cache). `all_logits` asks for every new token's logits, else the last one's.
struct SequenceStep {
  SeqId id = 0;
  int32_t state_row = 0;  // the sequence's live GDN state row (LinearStateCache::row of its slot)
  int64_t start = 0;
  std::span<const int32_t> tokens;
  bool all_logits = false;
  // Empty, or one GDN state checkpoint row per token (−1 = none): speculative verification rows.
  std::span<const int32_t> checkpoint_slots = {};
};

class ModelRunner {
 public:
  ModelRunner(Model& model, KvCache& kv, LinearStateCache& state) : model_(model), kv_(kv), state_(state) {}
  // Tensor parallelism (docs/parallel.md): `model`, `kv` and `state` are rank 0's, and every step also runs on the
  // group's other ranks, in lockstep. `ranks` must outlive the runner; nullptr = TP1.
  void set_ranks(TpFollowers* ranks) { ranks_ = ranks; }

  // Reserves KV for every sequence (throws Error(kOutOfMemory) when the pool runs out, before any work),
  // runs one forward, and returns the requested logits, row-major [rows, vocab], in step order. With a non-empty
  // `capture`, every token row's features are kept for features() / row_start().
  std::span<const float> step(std::span<const SequenceStep> steps, const FeatureSpec* capture = nullptr);
  // The same step, returning only each requested logit row's argmax (greedy choices made on the backend, LogitsOut).
  // `edits`: applied to the rows before the choice (LogitsOut::edits).
  std::span<const int32_t> step_argmax(std::span<const SequenceStep> steps, const FeatureSpec* capture = nullptr,
                                       std::span<const LogitEdit> edits = {});
  // The same step, returning each requested logit row's first k (value, id) pairs, [rows, k, 2] (LogitsOut::top).
  std::span<const float> step_top(std::span<const SequenceStep> steps, int32_t k, const FeatureSpec* capture = nullptr,
                                  std::span<const LogitEdit> edits = {});

  // The last step's features, host f32 [T, capture.width(H)] over all its token rows (empty without capture).
  std::span<const float> features() const { return features_; }
  // First token row of step i in the last step (rows of step i are [row_start(i), row_start(i + 1))).
  int32_t row_start(size_t i) const { return q_start_[i]; }

  Model& model() { return model_; }
  KvCache& kv() { return kv_; }
  LinearStateCache& state() { return state_; }

 private:
  // Packs the batch (reserving KV first) and runs the forward, handing back the logit rows in `form`.
  void run(std::span<const SequenceStep> steps, const FeatureSpec* capture, LogitsForm form,
           std::span<const LogitEdit> edits = {});

  Model& model_;
  KvCache& kv_;
  LinearStateCache& state_;
  TpFollowers* ranks_ = nullptr;
  // Reused between steps so a decode step allocates nothing.
  std::vector<int32_t> tokens_, positions_, q_start_, seq_len_, slots_, table_, kv_slots_, rows_, checkpoints_;
  std::vector<float> logits_, features_, top_;
  std::vector<int32_t> argmax_;
};

}  // namespace ninfer
