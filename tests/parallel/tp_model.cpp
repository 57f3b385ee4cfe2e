#include "tests/parallel/tp_model.h"

#include "engine/model/model_artifact.h"
#include "engine/model/weight_shard.h"
#include "engine/parallel/rank_replica.h"

namespace ninfer::testing {

TpModel::TpModel(const Artifact& artifact, int tp, Nvfp4Activations activations, DType kv_dtype, int threads_per_rank,
                 int64_t checkpoints, std::vector<int> devices) {
  config = load_model_config(artifact);
  const BackendSelection sel{.kind = devices.empty() ? BackendKind::kCpu : BackendKind::kCuda,
                             .device = devices.empty() ? 0 : devices.front(),
                             .threads = threads_per_rank,
                             .nvfp4_activations = activations};
  const KvCacheConfig kv_config{.block_size = 16, .num_blocks = 256, .dtype = kv_dtype};
  constexpr int64_t kSlots = 8;
  backend = make_backend(sel);
  weights = std::make_unique<WeightStore>(*backend);
  const ModelWeights full = ModelWeights::bind(artifact, config);
  ModelConfig rank_config = config;
  if (tp > 1) {
    ranks = std::make_unique<TpRanks>(full, config,
                                      TpSetup{.tp = tp, .backend = sel, .devices = devices, .kv = kv_config,
                                              .state_slots = kSlots, .state_checkpoints = checkpoints});
    const TpLayout layout = tp_layout(config, 0, tp);
    rank_config = tp_rank_config(config, layout);
    model = std::make_unique<Model>(rank_config, placed_shard(shard_weights(full, config, layout), *weights, "rank 0"),
                                    *backend, ranks->communicator(0));
  } else {
    model = std::make_unique<Model>(config, placed(full, *weights, "model"), *backend);
  }
  kv = std::make_unique<KvCache>(*backend, rank_config, kv_config);
  state = std::make_unique<LinearStateCache>(*backend, rank_config, kSlots, checkpoints);
  if (ranks) ranks->mirror_state(*state);
  runner = std::make_unique<ModelRunner>(*model, *kv, *state);
  runner->set_ranks(ranks.get());
}

int32_t TpModel::acquire() { return state->acquire(); }

void TpModel::release(SeqId id, int32_t slot) {
  kv->release(id);
  state->release(slot);
}

std::vector<int32_t> random_tokens(size_t n, int64_t vocab, uint32_t seed) {
  std::vector<int32_t> out;
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    out.push_back(static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(vocab)));
  }
  return out;
}

}  // namespace ninfer::testing
