// Owns the per-device memory plan: what each tensor-parallel rank's device holds (weight shards, KV, GDN state,
// drafter weights and caches, activations and workspaces, a fixed allowance and a safety margin) against each
// device's free memory; the table the start log and --plan-only print, and the shortfall error with the largest
// --max-context that fits (docs/memory-plan.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/artifact/dtype.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_shard.h"
#include "engine/plan/activation_plan.h"
#include "engine/plan/plan_tensors.h"
#include "engine/plan/rank_shard.h"
#include "engine/speculative/dflash2_config.h"

namespace ninfer {

enum class PlanSpec { kNone, kMtp, kDflash2 };

struct DevicePlanInput {
  ModelConfig config;               // the whole model's
  std::vector<PlanTensor> tensors;  // every tensor of the artifact (or of a --plan-config), all sections
  std::optional<Dflash2Config> dflash2;  // with PlanSpec::kDflash2
  int tp = 1;
  std::vector<int> devices;                // one per rank (empty: 0..tp-1)
  std::vector<uint64_t> available_bytes;   // free memory of each rank's device
  int64_t max_context = 0;
  int32_t max_concurrency = 1;
  int64_t kv_capacity = 0;  // tokens; 0 = auto (max_concurrency × max_context)
  int64_t kv_block_size = 16;
  DType kv_dtype = DType::kBF16;
  int64_t prefill_chunk = 2048;
  PlanSpec spec = PlanSpec::kNone;
  int32_t draft_tokens = 0;  // K
  bool lm_head_draft = false;
  int64_t prefix_state_rows = 0;  // prefix_state_rows() of the engine options (0 under TP or with a drafter)
  bool embedding_on_device = true;
  bool w4a4 = true;  // --nvfp4-activations w4a4
};

// One rank's device. Every part is bytes the device allocates (arena rounding included).
struct RankPlan {
  int rank = 0, device = 0;
  uint64_t weights = 0;           // the rank's shards of the main section (and the embedding when on the device)
  uint64_t replicated_weights = 0;  // of which whole on every rank (norms, embedding)
  uint64_t drafter_weights = 0;   // mtp / dflash2 / draft_lm_head shards
  uint64_t kv = 0;                // K and V (+ int8 scales) of the rank's KV heads
  uint64_t state = 0;             // GDN conv + recurrent rows: sequences, K checkpoints each, prefix snapshots
  uint64_t drafter_caches = 0;    // the MTP layer's or the DFlash2 drafter's own KV
  uint64_t activations = 0;       // the forward's and drafter's scratch buffers for the largest step
  uint64_t workspaces = 0;        // the CUDA ops' workspaces (W4A4 activations, GDN chunks, attention partials)
  uint64_t allowance = 0;         // fixed: driver/module images, NCCL, CUDA graphs, host staging
  uint64_t margin = 0;            // safety margin
  uint64_t available = 0;
  uint64_t total() const {
    return weights + drafter_weights + kv + state + drafter_caches + activations + workspaces + allowance + margin;
  }
  int64_t slack() const { return static_cast<int64_t>(available) - static_cast<int64_t>(total()); }
};

struct DevicePlan {
  int64_t kv_tokens = 0;  // per rank (every rank holds the same blocks of its own heads)
  int64_t max_context = 0;
  uint64_t kv_bytes_per_token = 0;  // per rank
  bool kv_replicated = false;       // KV heads fewer than ranks: each rank keeps a replica
  int64_t kv_heads_per_rank = 0;
  DType kv_dtype = DType::kBF16;
  std::vector<RankPlan> ranks;
  bool fits() const;
  // The per-device table (MiB), one header and one row per rank, plus the KV line.
  std::string table() const;
};

// What a rank of the plan is: its layout, its config (local heads and MLP rows), the drafter's layout and local
// config, which sections it loads. Shared by the per-device plan and the host plan of CPU ranks (host_plan.h).
struct PlanRank {
  TpLayout layout;
  ModelConfig config;
  bool mtp = false, dflash2 = false;
  int32_t draft_tokens = 0;  // K, 0 without a drafter
  std::optional<TpLayout> dflash2_layout;
  std::optional<Dflash2Config> local_dflash2;
  ShardPolicy policy;
};
PlanRank plan_rank_view(const DevicePlanInput& in, int rank);
// The rank's drafter caches (the MTP layer's or the DFlash2 drafter's own KV) at `max_context`, as the drafters
// size them (limits: max_context + K positions, engine/runtime/engine.cpp drafter_limits); 0 without a drafter.
uint64_t planned_drafter_cache_bytes(const DevicePlanInput& in, const PlanRank& rank, int64_t max_context);
// The activation plan's input for that rank's largest step; `device`: the CUDA backend's (arena rounding and op
// workspaces), else the CPU's scratch only.
ActivationInput activation_input(const DevicePlanInput& in, const PlanRank& rank, bool device, int64_t nvfp4_max_k,
                                 int64_t draft_head_rows, int64_t draft_head_total);

// The plan at in.max_context. Throws nothing about fit; see plan_devices_or_fail.
DevicePlan plan_devices(const DevicePlanInput& in);

// The plan, or Error(kOutOfMemory) naming each device that does not fit (bytes needed, available, missing, in bytes
// and MiB) and the largest --max-context (in steps of the KV block) that would fit with the same other settings.
DevicePlan plan_devices_or_fail(const DevicePlanInput& in);

// The largest max_context (a multiple of kv_block_size, at most in.max_context) whose plan fits; 0 when none does.
int64_t largest_fitting_context(const DevicePlanInput& in);

// Fixed per-device allowance and safety margin (docs/memory-plan.md).
uint64_t device_allowance_bytes(int tp);
uint64_t device_margin_bytes(uint64_t available);

}  // namespace ninfer
