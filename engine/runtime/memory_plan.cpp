#include "engine/runtime/memory_plan.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "engine/core/error.h"
#include "engine/model/weight_shard.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/linear_state.h"

#ifdef _WIN32
#include <windows.h>
#endif

namespace ninfer {

namespace {
constexpr double kMiB = 1024.0 * 1024.0;

MemoryPlan compute(const ModelConfig& c, const MemoryPlanInput& in, int64_t max_context) {
  MemoryPlan p;
  const int64_t tokens = in.kv_capacity > 0 ? in.kv_capacity : int64_t(in.max_concurrency) * max_context;
  p.kv_tokens = (tokens + in.kv_block_size - 1) / in.kv_block_size * in.kv_block_size;
  p.weight_bytes = in.weight_bytes;
  // Each rank's KV cache and linear state hold its own heads (tp_rank_config); at TP1 the model's.
  uint64_t kv_per_token = 0, state_per_slot = 0;
  for (int r = 0; r < std::max(in.tp, 1); ++r) {
    const ModelConfig rc = in.tp > 1 ? tp_rank_config(c, tp_layout(c, r, in.tp)) : c;
    kv_per_token += KvCache::bytes_per_token(rc, in.kv_dtype);
    state_per_slot += LinearStateCache::bytes_per_slot(rc);
  }
  p.kv_bytes = static_cast<uint64_t>(p.kv_tokens) * kv_per_token;
  const uint64_t slots_per_seq = 1 + static_cast<uint64_t>(std::max(in.draft_tokens, 0));  // + K checkpoints
  p.state_bytes = (static_cast<uint64_t>(in.max_concurrency) * slots_per_seq + static_cast<uint64_t>(in.prefix_state_rows)) *
                  state_per_slot;
  p.shard_copy_bytes = in.shard_copy_bytes;
  p.weights_resident = in.weights_resident;
  p.activation_bytes = in.activation_bytes;
  p.drafter_bytes = in.drafter_bytes ? in.drafter_bytes(max_context) : 0;
  p.available_bytes = in.available_bytes;
  return p;
}
}  // namespace

std::string MemoryPlan::describe() const {
  return fmt::format("weights {:.1f} MiB {}{}, KV cache {:.1f} MiB ({} tokens), linear state {:.1f} MiB{}{}; total "
                     "{:.1f} MiB of {:.1f} MiB available, slack {:.1f} MiB",
                     weight_bytes / kMiB, weights_resident ? "read into memory" : "mapped",
                     shard_copy_bytes > 0 ? fmt::format(" + {:.1f} MiB of shard copies", shard_copy_bytes / kMiB)
                                          : std::string(),
                     kv_bytes / kMiB, kv_tokens, state_bytes / kMiB,
                     drafter_bytes > 0 ? fmt::format(", drafter caches {:.1f} MiB", drafter_bytes / kMiB) : std::string(),
                     activation_bytes > 0 ? fmt::format(", activations {:.1f} MiB", activation_bytes / kMiB)
                                          : std::string(),
                     total_bytes() / kMiB, available_bytes / kMiB, slack_bytes() / kMiB);
}

MemoryPlan plan_memory(const ModelConfig& c, const MemoryPlanInput& in) {
  MemoryPlan p = compute(c, in, in.max_context);
  if (in.available_bytes == 0 || p.total_bytes() <= in.available_bytes) return p;
  // The largest context that fits, searched in whole blocks.
  int64_t lo = 0, hi = in.max_context / in.kv_block_size;
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (compute(c, in, mid * in.kv_block_size).total_bytes() <= in.available_bytes) lo = mid;
    else hi = mid - 1;
  }
  std::string fits = in.kv_capacity > 0 || lo == 0
                         ? std::string("no --max-context fits with these settings (lower --kv-capacity or --max-concurrency, or a smaller --kv-dtype)")
                         : fmt::format("the largest --max-context that fits is {}", lo * in.kv_block_size);
  fail(ErrorKind::kOutOfMemory,
       "memory plan does not fit: needs {} bytes ({:.1f} MiB: {}), {} bytes ({:.1f} MiB) available, {} bytes "
       "({:.1f} MiB) missing; {}",
       p.total_bytes(), p.total_bytes() / kMiB, p.describe(), in.available_bytes, in.available_bytes / kMiB,
       p.total_bytes() - in.available_bytes, (p.total_bytes() - in.available_bytes) / kMiB, fits);
}

uint64_t host_available_bytes() {
#ifdef _WIN32
  MEMORYSTATUSEX s{};
  s.dwLength = sizeof(s);
  return GlobalMemoryStatusEx(&s) ? static_cast<uint64_t>(s.ullAvailPhys) : 0;
#else
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
#endif
}

}  // namespace ninfer
