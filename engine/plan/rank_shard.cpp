#include "engine/plan/rank_shard.h"

#include <algorithm>
#include <regex>

#include <fmt/ranges.h>

#include "engine/core/error.h"

namespace ninfer {

namespace {

// "model.layers.3.mlp.up_proj.weight" → ("model", "mlp.up_proj.weight"); mtp.layers.N. and dflash2.layers.N. alike.
bool split_layer_name(const std::string& name, std::string& owner, std::string& leaf) {
  static const std::regex re(R"(^(model|mtp|dflash2)\.layers\.\d+\.(.+)$)");
  std::smatch m;
  if (!std::regex_match(name, m, re)) return false;
  owner = m[1].str();
  leaf = m[2].str();
  return true;
}

}  // namespace

uint64_t device_alloc_bytes(uint64_t bytes) {
  constexpr uint64_t kSmall = uint64_t{1} << 20, kLargeStep = uint64_t{2} << 20;
  bytes = std::max<uint64_t>(bytes, 1);
  if (bytes <= kSmall) return (bytes + 511) / 512 * 512;
  return (bytes + kLargeStep - 1) / kLargeStep * kLargeStep;
}

RankShard rank_shard(const PlanTensor& t, const ModelConfig& c, const TpLayout& l,
                     const std::optional<Dflash2Config>& dflash2, const std::optional<TpLayout>& dl,
                     const ShardPolicy& policy) {
  RankShard s;
  s.shape = t.shape;
  if (t.section == "vision" || (t.section == "mtp" && !policy.mtp) || (t.section == "dflash2" && !policy.dflash2) ||
      (t.section == "draft_lm_head" && !policy.draft_lm_head)) {
    s.placement = ShardPlacement::kExcluded;
    return s;
  }
  auto finish = [&](ShardPlacement p) {
    s.placement = p;
    if (p == ShardPlacement::kSplit || p == ShardPlacement::kReplicated) {
      const auto bytes = tensor_storage_bytes(t.dtype, s.shape);
      if (!bytes)
        fail(ErrorKind::kInvalidArgument, "memory plan: tensor '{}' cannot be {} of shape [{}] on rank {}", t.name,
             dtype_name(t.dtype), fmt::join(s.shape, ", "), l.rank);
      s.bytes = *bytes;
    }
    return s;
  };
  auto rows = [&](int64_t n) {
    s.shape[0] = n;
    return finish(ShardPlacement::kSplit);
  };
  auto cols = [&](int64_t n) {
    s.shape[1] = n;
    return finish(ShardPlacement::kSplit);
  };
  if (t.name == "model.embed_tokens.weight")
    return finish(policy.embedding_on_device ? ShardPlacement::kReplicated : ShardPlacement::kHost);
  if (t.name == "dflash2.config" || t.name == "draft_lm_head.ids") return finish(ShardPlacement::kHost);
  if (t.name == "lm_head.weight" || t.name == "draft_lm_head.weight") {
    const int64_t n = t.shape[0];  // vocabulary rows split as tp_layout splits the lm_head: [n·r/N, n·(r+1)/N)
    return rows(n * (l.rank + 1) / l.size - n * l.rank / l.size);
  }
  std::string owner, leaf;
  if (!split_layer_name(t.name, owner, leaf) || t.shape.empty()) return finish(ShardPlacement::kReplicated);
  const bool drafter = owner == "dflash2";
  if (drafter && (!dflash2 || !dl))
    fail(ErrorKind::kInternal, "memory plan: dflash2 tensor '{}' without the drafter's config", t.name);
  const TpLayout& lay = drafter ? *dl : l;
  const int64_t hd = drafter ? dflash2->head_dim : c.head_dim;
  const int64_t per_head = !drafter && c.attn_output_gate ? 2 * hd : hd;
  if (leaf == "mlp.gate_proj.weight" || leaf == "mlp.up_proj.weight") return rows(lay.inter);
  if (leaf == "mlp.down_proj.weight") return cols(lay.inter);
  if (leaf == "self_attn.q_proj.weight") return rows(lay.q_heads * per_head);
  if (leaf == "self_attn.k_proj.weight" || leaf == "self_attn.v_proj.weight") return rows(lay.kv_heads * hd);
  if (leaf == "self_attn.o_proj.weight") return cols(lay.q_heads * hd);
  const int64_t dk = c.linear_key_head_dim, dv = c.linear_value_head_dim;
  if (leaf == "linear_attn.in_proj_qkv.weight" || leaf == "linear_attn.conv1d.weight")
    return rows(2 * l.gdn_k_heads * dk + l.gdn_v_heads * dv);
  if (leaf == "linear_attn.in_proj_z.weight") return rows(l.gdn_v_heads * dv);
  if (leaf == "linear_attn.in_proj_a.weight" || leaf == "linear_attn.in_proj_b.weight" ||
      leaf == "linear_attn.dt_bias" || leaf == "linear_attn.A_log")
    return rows(l.gdn_v_heads);
  if (leaf == "linear_attn.out_proj.weight") return cols(l.gdn_v_heads * dv);
  return finish(ShardPlacement::kReplicated);  // norms (input/post, q/k, the GDN norm)
}

}  // namespace ninfer
