#include "engine/parallel/rank_replica.h"

#include <string>

#include "engine/core/error.h"
#include "engine/model/weight_shard.h"

namespace ninfer {

ModelWeights placed_shard(ModelWeights shard, WeightStore& store, const std::string& what) {
  const Tensor embed = shard.embed;
  shard.embed = Tensor{};  // not uploaded (an empty view stays empty)
  ModelWeights w = placed(std::move(shard), store, what);
  w.embed = embed;
  return w;
}

RankReplica::RankReplica(const ModelWeights& full, const ModelConfig& config, int rank, const TpSetup& setup,
                         std::unique_ptr<Backend> b, Communicator& comm)
    : backend(std::move(b)) {
  const TpLayout layout = tp_layout(config, rank, setup.tp);
  const ModelConfig rc = tp_rank_config(config, layout);
  weights = std::make_unique<WeightStore>(*backend);
  model = std::make_unique<Model>(rc, placed_shard(shard_weights(full, config, layout), *weights, "rank " + std::to_string(rank)),
                                  *backend, comm);
  kv = std::make_unique<KvCache>(*backend, rc, setup.kv);
  state = std::make_unique<LinearStateCache>(*backend, rc, setup.state_slots, setup.state_checkpoints,
                                             setup.state_extra_rows);
}

void RankReplica::apply(const StateOp& op) {
  switch (op.kind) {
    case StateOp::Kind::kZero: return state->zero_row(op.dst);
    case StateOp::Kind::kCopy: return state->copy_slot(op.dst, op.src);
  }
  fail(ErrorKind::kInternal, "unknown GDN state operation {}", static_cast<int>(op.kind));
}

void RankReplica::forward(const ForwardBatch& batch, LogitsForm form, std::span<const LogitEdit> edits) {
  backend->bind_thread();
  if (form.argmax) {
    argmax.resize(batch.logit_rows.size());
    return model->forward(batch, *kv, *state, LogitsOut{.argmax = argmax, .edits = edits});
  }
  if (form.top_k > 0) {
    top.resize(batch.logit_rows.size() * static_cast<size_t>(form.top_k) * 2);
    return model->forward(batch, *kv, *state, LogitsOut{.top = top, .top_k = form.top_k, .edits = edits});
  }
  logits.resize(batch.logit_rows.size() * static_cast<size_t>(model->config().vocab_size));
  model->forward(batch, *kv, *state, logits);
}

}  // namespace ninfer
