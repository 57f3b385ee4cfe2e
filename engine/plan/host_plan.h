// Owns what CPU ranks hold in host memory beyond the mapped artifact, the KV cache, the linear state and the drafter
// caches that plan_memory() (engine/runtime/memory_plan.h) counts: the weight copies tensor-parallel shards make,
// and each rank's activation scratch and CPU backend buffers for the largest step (docs/memory-plan.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/plan/device_plan.h"
#include "engine/plan/rank_shard.h"

namespace ninfer {

struct HostRankPlan {
  int rank = 0;
  uint64_t shard_copies = 0;  // weights copied out of the mapping by its shard (WeightShard), main and drafter
  uint64_t activations = 0;   // the forward's and the drafter's named scratch buffers (ScratchBuffers, 1.5× grown)
  uint64_t workspaces = 0;    // the CPU backend's own buffers (cpu_workspace_bytes)
};

struct HostRanksPlan {
  std::vector<HostRankPlan> ranks;
  uint64_t shard_copies() const;
  uint64_t activations() const;  // activations + workspaces of every rank
};

// `in` as for the per-device plan (available_bytes and devices are not read); `threads` is --threads (0: every
// hardware thread), split over the ranks as tp_rank_threads() splits it; `bf16_activations` is
// --dense-activations bf16.
HostRanksPlan plan_host_ranks(const DevicePlanInput& in, int threads, bool bf16_activations);

// The tensors every rank copies into its own shard (shard_is_copy), of every section the ranks load; none at TP1.
// Their mapped pages are read once, at load: the server leaves them mapped (Artifact::make_resident's keep_mapped),
// and the host plan leaves them out of the weights (clean page cache the kernel may reclaim).
std::vector<std::string> tensors_every_rank_copies(const DevicePlanInput& in);

// Whether a rank's CPU shard of `t` (placement `s`) is a copy rather than a view of the mapped artifact:
// weight_shard.cpp copies every nvfp4 shard and rows taken from several ranges (GDN in_proj_qkv and conv1d); nothing
// is sharded at TP1.
bool shard_is_copy(const PlanTensor& t, const RankShard& s, const TpLayout& layout);

}  // namespace ninfer
