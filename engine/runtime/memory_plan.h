// Owns the host memory plan (the CPU backend, any number of CPU ranks): bytes for weights and their shard copies, KV
// cache, linear state, drafter caches and activations against the host's free memory, and the error that says what
// is missing and what would fit.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "engine/artifact/dtype.h"
#include "engine/model/model_config.h"

namespace ninfer {

struct MemoryPlanInput {
  uint64_t weight_bytes = 0;  // the weights of the sections served (the model's and the drafter's): mapped (under CPU
                              // TP without the tensors every rank copies, host_plan.h), or copied into memory
  bool weights_resident = false;  // the artifact is read into memory (--no-mmap) rather than mapped
  int64_t max_context = 0;
  int32_t max_concurrency = 1;
  int64_t kv_capacity = 0;    // tokens; 0 = auto (max_concurrency × max_context)
  int64_t kv_block_size = 16;
  DType kv_dtype = DType::kF32;  // f32 | bf16 | f16 | i8; KvCache::bytes_per_token (i8: codes + scales) sizes it
  uint64_t available_bytes = 0;  // free memory of the device (CPU: MemAvailable)
  int32_t draft_tokens = 0;      // speculative decoding K (0 = off): K GDN state checkpoints per sequence
  int64_t prefix_state_rows = 0;  // linear-state rows of the prefix cache (prefix_state_rows(), engine/runtime/engine.h)
  int tp = 1;  // CPU ranks sharing the host: KV and linear state are counted per rank (its heads; replicas when a
              // model has fewer KV heads than ranks)
  uint64_t shard_copy_bytes = 0;  // weights the ranks' shards copy out of the mapping (plan_host_ranks, engine/plan)
  uint64_t activation_bytes = 0;  // every rank's activation scratch and CPU backend buffers (plan_host_ranks)
  // The speculative drafter's own caches for a given max_context (drafter_cache_bytes with the engine's limits);
  // empty = no drafter. A function, since the largest context that fits is searched.
  std::function<uint64_t(int64_t max_context)> drafter_bytes = nullptr;
};

struct MemoryPlan {
  int64_t kv_tokens = 0;  // rounded up to whole blocks
  uint64_t weight_bytes = 0, kv_bytes = 0, state_bytes = 0;  // state: sequence slots, checkpoints, prefix snapshots
  uint64_t drafter_bytes = 0;  // the drafter's KV / state caches
  bool weights_resident = false;  // as in MemoryPlanInput
  uint64_t shard_copy_bytes = 0, activation_bytes = 0;  // as in MemoryPlanInput
  uint64_t total_bytes() const {
    return weight_bytes + shard_copy_bytes + kv_bytes + state_bytes + drafter_bytes + activation_bytes;
  }
  uint64_t available_bytes = 0;
  int64_t slack_bytes() const { return static_cast<int64_t>(available_bytes) - static_cast<int64_t>(total_bytes()); }
  std::string describe() const;  // one line per part, MiB
};

// Throws Error(kOutOfMemory) when the plan does not fit: bytes needed, available, missing, and the
// largest max_context (in steps of kv_block_size) that would fit with the same other settings.
MemoryPlan plan_memory(const ModelConfig& config, const MemoryPlanInput& in);

// MemAvailable of /proc/meminfo (Linux) or the physical memory free (Windows); 0 when unknown.
uint64_t host_available_bytes();

}  // namespace ninfer
