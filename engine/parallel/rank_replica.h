// Owns one follower rank's share of a tensor-parallel model (its backend, weights placed on the backend's device,
// model, KV cache and GDN state) and running rank 0's work on it: built the same way for a follower thread of an
// in-process group (TpRanks) and for a follower process of a multi-process group (remote_follower.h).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/weight_store.h"
#include "engine/model/model.h"
#include "engine/parallel/step_message.h"
#include "engine/parallel/tp_ranks.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/linear_state.h"

namespace ninfer {

// A rank's shard placed on `store`'s device, the embedding left in host memory (under TP every rank would hold the
// whole table, and a lookup reads only T rows a step: docs/memory-plan.md counts it on the host). `what` labels the
// upload's progress bar.
ModelWeights placed_shard(ModelWeights shard, WeightStore& store, const std::string& what);

struct RankReplica {
  // Rank `rank` (≥ 1) of setup.tp, cut from the model's full weights (views into the artifact, which must outlive
  // it), computing on `backend` (its device: the weights are placed there) with `comm` its handle on the group.
  RankReplica(const ModelWeights& full, const ModelConfig& config, int rank, const TpSetup& setup,
              std::unique_ptr<Backend> backend, Communicator& comm);

  // Rank 0's GDN state operation, done on this rank's rows.
  void apply(const StateOp& op);
  // The same forward rank 0 runs (its collectives meet rank 0's), asking for the logit rows in the `form` rank 0 asked
  // for (the rows, their argmax or their top pairs: LogitsOut) with rank 0's `edits` of them. This rank's copy of the
  // answer is dropped.
  void forward(const ForwardBatch& batch, LogitsForm form, std::span<const LogitEdit> edits = {});

  std::unique_ptr<Backend> backend;
  std::unique_ptr<WeightStore> weights;
  std::unique_ptr<Model> model;
  std::unique_ptr<KvCache> kv;
  std::unique_ptr<LinearStateCache> state;
  std::vector<float> logits;
  std::vector<int32_t> argmax;
  std::vector<float> top;
};

}  // namespace ninfer
