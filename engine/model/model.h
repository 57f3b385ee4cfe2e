// Owns the Qwen3.5 hybrid / Qwen3 dense forward pass, written once against the Backend op interface.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "engine/backend/backend.h"
#include "engine/backend/scratch_buffers.h"
#include "engine/model/forward_batch.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/model/step_graphs.h"
#include "engine/parallel/communicator.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/linear_state.h"

namespace ninfer {

class Model {
 public:
  // `weights` views must outlive the model (they point into the artifact mapping). Under tensor parallelism
  // (docs/parallel.md) `config` is the rank's (tp_rank_config: its local heads), `weights` its shard
  // (shard_weights) and `comm` its handle on the group, which must outlive the model; the default is TP1.
  Model(const ModelConfig& config, ModelWeights weights, Backend& backend,
        Communicator& comm = single_rank_communicator());

  // Runs every layer over the batch's new tokens, writing their K/V and advancing their linear state,
  // and stores the logits of batch.logit_rows into `logits` (host, row-major [R, vocab]). With an active
  // `capture`, also writes every row's features (FeatureCapture); the final norm then runs over all rows.
  void forward(const ForwardBatch& batch, KvCache& kv, LinearStateCache& state, std::span<float> logits,
               const FeatureCapture& capture = {}) {
    forward(batch, kv, state, LogitsOut{.rows = logits}, capture);
  }
  // The same, handing back the logit rows or only their argmax (LogitsOut).
  void forward(const ForwardBatch& batch, KvCache& kv, LinearStateCache& state, const LogitsOut& out,
               const FeatureCapture& capture = {});

  // The ids the model may produce: vocab_size flags, 0 for an id it may not (a padded embedding row); empty = every
  // id. The forward sets the others' logits to −inf on the backend before they are copied out or reduced to their
  // argmax (Backend::mask_columns).
  void set_output_mask(std::span<const uint8_t> allowed);

  // Op graphs for decode and verification steps (docs/cuda-graphs.md): on a backend that records them, with
  // collectives that may be recorded; otherwise the forward stays eager and the log says why. Off by default.
  void enable_step_graphs(bool on);
  // nullptr while step graphs are off.
  const StepGraphStats* step_graph_stats() const { return graphs_ ? &graphs_->stats() : nullptr; }

  const ModelConfig& config() const { return config_; }
  Backend& backend() { return backend_; }
  Communicator& communicator() { return comm_; }
  // Bytes of its activation scratch buffers now (the memory plans' activations).
  uint64_t scratch_bytes() const { return scratch_.bytes(); }

 private:
  // Every op after the embedding (which has read batch.tokens into the "x" scratch): the layers, the final norm
  // and, with `head`, the lm_head, leaving the logit rows in the "logits" scratch (without: the final-normed rows in
  // "sel") and, with `features`, every row's features in the "features" scratch. Reads the batch's index spans only:
  // the part of a step an op graph records.
  void body(const ForwardBatch& batch, KvCache& kv, LinearStateCache& state, const FeatureSpec* features, bool head);
  void attention_block(const LayerWeights& w, int64_t attn_layer, const Tensor& h, const Tensor& out,
                       const ForwardBatch& batch, KvCache& kv);
  void delta_net_block(const LayerWeights& w, int64_t gdn_layer, const Tensor& h, const Tensor& out,
                       const ForwardBatch& batch, LinearStateCache& state);

  ModelConfig config_;
  ModelWeights w_;
  Backend& backend_;
  Communicator& comm_;
  float norm_offset_;  // 1 for Qwen3.5's zero-centred (1 + w) RMSNorm, 0 for Qwen3's plain w
  ScratchBuffers scratch_;  // a reusable activation buffer per name, grown on demand
  std::unique_ptr<StepGraphs> graphs_;  // null: every step runs eagerly
  Buffer output_mask_buffer_;           // set_output_mask's flags on the backend (i8 [vocab]); empty: none
  Tensor output_mask_;
};

}  // namespace ninfer
