// Owns what one tensor-parallel rank holds of each tensor: the shard shape shard_weights() cuts (engine/model/
// weight_shard.cpp), whether the tensor is replicated or stays on the host, and the bytes the device allocates for it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/model/weight_shard.h"
#include "engine/plan/plan_tensors.h"
#include "engine/speculative/dflash2_config.h"

namespace ninfer {

enum class ShardPlacement {
  kSplit,       // a slice on every rank (heads, MLP rows, vocabulary rows)
  kReplicated,  // the whole tensor on every rank (norms, mtp.fc, dflash2.fc, ...; replicated KV / GDN key heads count
                // as kSplit with the replica's rows)
  kHost,        // not on the device: the embedding when the plan keeps it on the host, dflash2.config, index tensors
  kExcluded,    // never loaded: the vision section, and drafter sections the run does not use
};

struct RankShard {
  ShardPlacement placement = ShardPlacement::kExcluded;
  std::vector<int64_t> shape;  // the rank's shape (the full one when replicated)
  uint64_t bytes = 0;          // storage bytes of that shape in the tensor's dtype (0 unless on the device)
};

// What the plan loads: which drafter sections, and where the embedding lives.
struct ShardPolicy {
  bool mtp = false;            // the mtp section (--spec mtp)
  bool dflash2 = false;        // the dflash2 section (--spec dflash2)
  bool draft_lm_head = false;  // the draft_lm_head section (--lm-head-draft)
  bool embedding_on_device = true;
};

// Rank `layout.rank`'s share of `t`. `target` is the full model config; `dflash2` the drafter's (needed only for its
// tensors). The layouts come from tp_layout() (the drafter's from dflash2_tp_layout()).
RankShard rank_shard(const PlanTensor& t, const ModelConfig& target, const TpLayout& layout,
                     const std::optional<Dflash2Config>& dflash2, const std::optional<TpLayout>& dflash2_layout,
                     const ShardPolicy& policy);

// Bytes the CUDA backend's caching arena hands out for a request of `bytes` (DeviceArena::round_size in
// engine/backend/cuda/device_arena.cpp: up to 1 MiB in 512-byte classes, above in 2 MiB steps).
uint64_t device_alloc_bytes(uint64_t bytes);

}  // namespace ninfer
