#include "engine/plan/host_plan.h"

#include <algorithm>
#include <numeric>

#include "engine/backend/cpu/cpu_workspace.h"
#include "engine/parallel/tp_ranks.h"

namespace ninfer {

bool shard_is_copy(const PlanTensor& t, const RankShard& s, const TpLayout& layout) {
  if (layout.size <= 1 || s.placement != ShardPlacement::kSplit) return false;
  if (t.dtype == DType::kNVFP4) return true;
  const auto ends_with = [&](const char* leaf) {
    const std::string l(leaf);
    return t.name.size() >= l.size() && t.name.compare(t.name.size() - l.size(), l.size(), l) == 0;
  };
  return ends_with(".linear_attn.in_proj_qkv.weight") || ends_with(".linear_attn.conv1d.weight");
}

std::vector<std::string> tensors_every_rank_copies(const DevicePlanInput& in) {
  std::vector<std::string> names;
  if (in.tp <= 1) return names;
  const PlanRank pr = plan_rank_view(in, 0);  // every rank cuts the same tensors the same way
  for (const PlanTensor& t : in.tensors) {
    const RankShard s = rank_shard(t, in.config, pr.layout, in.dflash2, pr.dflash2_layout, pr.policy);
    if (s.placement != ShardPlacement::kExcluded && shard_is_copy(t, s, pr.layout)) names.push_back(t.name);
  }
  return names;
}

uint64_t HostRanksPlan::shard_copies() const {
  return std::accumulate(ranks.begin(), ranks.end(), uint64_t{0},
                         [](uint64_t n, const HostRankPlan& r) { return n + r.shard_copies; });
}

uint64_t HostRanksPlan::activations() const {
  return std::accumulate(ranks.begin(), ranks.end(), uint64_t{0},
                         [](uint64_t n, const HostRankPlan& r) { return n + r.activations + r.workspaces; });
}

HostRanksPlan plan_host_ranks(const DevicePlanInput& in, int threads, bool bf16_activations) {
  HostRanksPlan out;
  for (int rank = 0; rank < in.tp; ++rank) {
    const PlanRank pr = plan_rank_view(in, rank);
    HostRankPlan r;
    r.rank = rank;
    int64_t nvfp4_max_k = 0, dense_max_k = 0, draft_head_rows = pr.layout.vocab, draft_head_total = in.config.vocab_size;
    uint64_t lm_head_copy = 0;  // the rank's lm_head shard when it is a copy
    for (const PlanTensor& t : in.tensors) {
      const RankShard s = rank_shard(t, in.config, pr.layout, in.dflash2, pr.dflash2_layout, pr.policy);
      if (s.placement == ShardPlacement::kExcluded) continue;
      const bool copy = shard_is_copy(t, s, pr.layout);
      if (copy) r.shard_copies += s.bytes;
      if (s.shape.size() == 2 && s.placement != ShardPlacement::kHost) {
        int64_t& widest = t.dtype == DType::kNVFP4 ? nvfp4_max_k : dense_max_k;
        widest = std::max(widest, s.shape[1]);
      }
      if (t.name == "lm_head.weight" && copy) lm_head_copy = s.bytes;
      if (t.name == "draft_lm_head.weight") draft_head_rows = s.shape[0], draft_head_total = t.shape[0];
    }
    // A drafter that scores with the target's lm_head cuts its own shard of it (mtp_drafter.cpp, dflash2_drafter.cpp):
    // a second copy where the shard is one.
    if ((pr.mtp || pr.dflash2) && !pr.policy.draft_lm_head) r.shard_copies += lm_head_copy;

    const ActivationInput ai = activation_input(in, pr, false, nvfp4_max_k, draft_head_rows, draft_head_total);
    r.activations = plan_activations(ai).scratch_bytes();
    const ModelConfig& rc = pr.config;
    CpuWorkspaceShape w{.threads = tp_rank_threads(threads, in.tp),
                        .rows = ai.step.tokens,
                        .nvfp4_max_k = nvfp4_max_k,
                        .w4a4 = in.w4a4,
                        .dense_max_k = dense_max_k,
                        .bf16_activations = bf16_activations,
                        .kv_block_size = in.kv_block_size,
                        .rotary_dim = rc.rotary_dim};
    if (rc.num_full_attention_layers() > 0 || pr.mtp)
      w.head_dim = rc.head_dim, w.query_group = rc.num_heads / std::max<int64_t>(1, rc.num_kv_heads);
    if (pr.local_dflash2) {
      const Dflash2Config& d = *pr.local_dflash2;
      w.head_dim = std::max(w.head_dim, d.head_dim);
      w.query_group = std::max(w.query_group, d.num_heads / std::max<int64_t>(1, d.num_kv_heads));
      w.rows = std::max(w.rows, ai.step.sequences * d.block_size);
    }
    if (rc.num_linear_attention_layers() > 0) w.gdn_dk = rc.linear_key_head_dim, w.gdn_dv = rc.linear_value_head_dim;
    r.workspaces = cpu_workspace_bytes(w).total();
    out.ranks.push_back(r);
  }
  return out;
}

}  // namespace ninfer
