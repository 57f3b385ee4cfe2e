// Owns the tensor-parallel test harness: one artifact built into a TP-N model set (rank 0's model, KV, state and
// runner, the other ranks in TpRanks), or TP1 without TpRanks, for comparing the two; on CPU ranks, or on CUDA ranks
// on given devices (distinct: NCCL; repeated: ranks sharing a GPU through host memory).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/artifact/artifact.h"
#include "engine/backend/weight_store.h"
#include "engine/model/model.h"
#include "engine/parallel/tp_ranks.h"
#include "engine/runtime/model_runner.h"

namespace ninfer::testing {

struct TpModel {
  // `devices` empty: CPU ranks; else CUDA ranks, rank r on devices[r] (tp entries).
  TpModel(const Artifact& artifact, int tp, Nvfp4Activations activations = Nvfp4Activations::kNvfp4,
          DType kv_dtype = DType::kF32, int threads_per_rank = 1, int64_t checkpoints = 0, std::vector<int> devices = {});

  // A zeroed GDN state slot on every rank (rank 0's state mirrors its operations on every rank; `checkpoints` per
  // slot follow the sequence slots).
  int32_t acquire();
  void release(SeqId id, int32_t slot);

  ModelConfig config;  // the model's (full)
  std::unique_ptr<Backend> backend;
  std::unique_ptr<WeightStore> weights;  // rank 0's (uploads on CUDA)
  std::unique_ptr<TpRanks> ranks;  // null at TP1
  std::unique_ptr<Model> model;
  std::unique_ptr<KvCache> kv;
  std::unique_ptr<LinearStateCache> state;
  std::unique_ptr<ModelRunner> runner;
};

// Deterministic pseudo-random token ids in [0, vocab).
std::vector<int32_t> random_tokens(size_t n, int64_t vocab, uint32_t seed);

}  // namespace ninfer::testing
