// Owns the memory plan: bytes for weights, KV cache and linear state against what the device has free,
// and the error that says what is missing and what would fit.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "engine/artifact/dtype.h"
#include "engine/model/model_config.h"

namespace ninfer {

struct MemoryPlanInput {
  uint64_t weight_bytes = 0;  // resident weights (the artifact's main section)
  int64_t max_context = 0;
  int32_t max_concurrency = 1;
  int64_t kv_capacity = 0;    // tokens; 0 = auto (max_concurrency × max_context)
  int64_t kv_block_size = 16;
  DType kv_dtype = DType::kF32;  // f32 | bf16 | f16 | i8; KvCache::bytes_per_token (i8: codes + scales) sizes it
  uint64_t available_bytes = 0;  // free memory of the device (CPU: MemAvailable)
  int32_t draft_tokens = 0;      // speculative decoding K (0 = off): K GDN state checkpoints per sequence
  int64_t prefix_state_rows = 0;  // linear-state rows of the prefix cache (prefix_state_rows(), engine/runtime/engine.h)
  // The speculative drafter's own caches for a given max_context (drafter_cache_bytes with the engine's limits);
  // empty = no drafter. A function, since the largest context that fits is searched.
  std::function<uint64_t(int64_t max_context)> drafter_bytes = nullptr;
};

struct MemoryPlan {
  int64_t kv_tokens = 0;  // rounded up to whole blocks
  uint64_t weight_bytes = 0, kv_bytes = 0, state_bytes = 0;  // state: sequence slots, checkpoints, prefix snapshots
  uint64_t drafter_bytes = 0;  // the drafter's KV / state caches
  uint64_t total_bytes() const { return weight_bytes + kv_bytes + state_bytes + drafter_bytes; }
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
