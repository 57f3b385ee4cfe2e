#include "engine/plan/activation_plan.h"

#include <algorithm>
#include <initializer_list>

#include "engine/plan/rank_shard.h"

namespace ninfer {

namespace {

constexpr uint64_t kF32 = 4;
constexpr int64_t kDeltaChunk = 64;                      // kernels/gdn/delta_rule_chunked.cu kC
constexpr uint64_t kChunkWindowBytes = uint64_t{64} << 20;  // engine/backend/cuda/cuda_gdn.cpp

struct Builder {
  const ActivationInput& in;
  ActivationPlan& out;
  // ScratchBuffers::get: bytes + bytes / 2, then the device arena's rounding.
  void scratch(const std::string& name, std::initializer_list<int64_t> dims) {
    uint64_t n = 1;
    for (int64_t d : dims) n *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
    uint64_t bytes = n * kF32;
    bytes += bytes / 2;
    out.scratch.push_back({name, in.device ? device_alloc_bytes(bytes) : bytes});
  }
  // CudaBackend::workspace: bytes + bytes / 4, then the arena's rounding.
  void workspace(const std::string& name, uint64_t bytes) {
    if (!in.device || bytes == 0) return;
    out.workspaces.push_back({name, device_alloc_bytes(bytes + bytes / 4)});
  }
};

int64_t round16(int64_t v) { return (v + 15) / 16 * 16; }

// kern::nvfp4_act_layout(K).row_bytes (kernels/gemm/gemm.h): codes K/2 and e4m3 scales K/16 (16-aligned), the
// expanded int8 codes K and f32 scales K/16 (16-aligned), then the row's f32 global scale in 16 bytes.
int64_t nvfp4_act_row_bytes(int64_t K) {
  const int64_t i8 = round16(K / 2 + K / 16);
  const int64_t scale_f32 = i8 + K;
  return round16(scale_f32 + 4 * (K / 16)) + 16;
}

}  // namespace

StepShape largest_step(int64_t prefill_chunk, int32_t max_concurrency, int32_t draft_tokens) {
  const int64_t per_seq = 1 + std::max(draft_tokens, 0);
  return {.tokens = prefill_chunk + int64_t{max_concurrency} * per_seq,
          .logit_rows = int64_t{max_concurrency} * per_seq,
          .sequences = max_concurrency};
}

uint64_t ActivationPlan::scratch_bytes() const {
  uint64_t n = 0;
  for (const ActivationPart& p : scratch) n += p.bytes;
  return n;
}
uint64_t ActivationPlan::workspace_bytes() const {
  uint64_t n = 0;
  for (const ActivationPart& p : workspaces) n += p.bytes;
  return n;
}

ActivationPlan plan_activations(const ActivationInput& in) {
  ActivationPlan out;
  Builder b{in, out};
  const ModelConfig& c = in.rank_config;
  const int64_t T = in.step.tokens, R = in.step.logit_rows, S = in.step.sequences, H = c.hidden_size;

  // Model::forward (engine/model/model.cpp).
  b.scratch("x", {T, H});
  b.scratch("h", {T, H});
  b.scratch("mix", {T, H});
  if (c.num_full_attention_layers() > 0) {
    const int64_t nh = c.num_heads, nkv = c.num_kv_heads, hd = c.head_dim;
    b.scratch("attn_qg", {T, nh * (c.attn_output_gate ? 2 * hd : hd)});
    b.scratch("attn_q", {T, nh, hd});
    b.scratch("attn_k", {T, nkv, hd});
    b.scratch("attn_v", {T, nkv, hd});
    b.scratch("attn_o", {T, nh, hd});
  }
  if (c.num_linear_attention_layers() > 0) {
    const int64_t C = c.linear_conv_dim(), nk = c.linear_num_key_heads, nv = c.linear_num_value_heads;
    const int64_t dk = c.linear_key_head_dim, dv = c.linear_value_head_dim;
    b.scratch("gdn_qkv", {T, C});
    b.scratch("gdn_z", {T, nv, dv});
    b.scratch("gdn_a", {T, nv});
    b.scratch("gdn_b", {T, nv});
    b.scratch("gdn_conv", {T, C});
    b.scratch("gdn_q", {T, nk, dk});
    b.scratch("gdn_k", {T, nk, dk});
    b.scratch("gdn_g", {T, nv});
    b.scratch("gdn_beta", {T, nv});
    b.scratch("gdn_core", {T, nv, dv});
    // gated_delta_rule's chunked form: one task per 64-row chunk of each sequence, in windows of at most 64 MiB.
    const uint64_t per_task = static_cast<uint64_t>(nv * kDeltaChunk) * (8 + kF32 * static_cast<uint64_t>(dk + dv));
    const uint64_t per_window = std::max<uint64_t>(1, kChunkWindowBytes / per_task);
    const uint64_t tasks = static_cast<uint64_t>((T + kDeltaChunk - 1) / kDeltaChunk + S);
    b.workspace("gated_delta_rule.chunks", std::min(per_window, tasks) * per_task);
  }
  b.scratch("mlp_gate", {T, c.intermediate_size});
  b.scratch("mlp_up", {T, c.intermediate_size});
  // attention's work plan and split-K partials (kernels/attention/attention_plan.h): a step is split only while its
  // tiles × KV heads are fewer than one wave of CTAs, so slots × n_kv < 2 · wave and the partials stay below
  // 2 · wave · m · (head_dim_padded + 2) floats, with m ≤ 16 query vectors per tile; the plan holds at most
  // tiles + wave + 1 items of 8 int32 and a combine entry of 5 per tile, tiles ≤ sequences + T · (query heads per
  // KV head). The wave (resident CTAs × SMs) is the device's; the plan takes kPlanAttentionWave = 2048 (e.g. 16 × 128
  // SMs). One workspace serves the target's and the drafters' attention (same name), so the widest head counts.
  {
    int64_t hd = c.num_full_attention_layers() > 0 || in.mtp ? c.head_dim : 0;
    int64_t group = c.num_full_attention_layers() > 0 || in.mtp ? c.num_heads / std::max<int64_t>(1, c.num_kv_heads) : 0;
    if (in.dflash2) {
      hd = std::max(hd, in.dflash2->head_dim);
      group = std::max(group, in.dflash2->num_heads / std::max<int64_t>(1, in.dflash2->num_kv_heads));
    }
    if (hd > 0) {
      constexpr uint64_t kPlanAttentionWave = 2048, kMaxTileVectors = 16;
      const uint64_t padded = hd <= 128 ? 128 : hd <= 256 ? 256 : 512;
      b.workspace("attention.partials", 2 * kPlanAttentionWave * kMaxTileVectors * (padded + 2) * kF32);
      const auto tiles = static_cast<uint64_t>(S + T * group);
      b.workspace("attention.plan", ((tiles + kPlanAttentionWave + 1) * 8 + tiles * 5 + 4) * sizeof(int32_t));
    }
  }
  b.scratch("sel", {R, H});
  b.scratch("logits", {R, c.vocab_size});
  // The target's features a drafter reads, staged on the device before their copy to the host: MTP one row of H,
  // DFlash2 one per target layer it reads (rank 0 only; the plan counts them on every rank, a small overcount).
  if (in.mtp || in.dflash2) {
    const int64_t width = std::max<int64_t>(in.mtp ? H : 0, in.dflash2 ? in.dflash2->feature_size() : 0);
    b.scratch("features", {T, width});
  }
  if (in.tp > 1) b.scratch("logits_part", {R, in.vocab_share});
  if (in.w4a4 && in.nvfp4_max_k > 0)
    b.workspace("linear.nvfp4_act", static_cast<uint64_t>(T * nvfp4_act_row_bytes(in.nvfp4_max_k)));

  // MtpDrafter (engine/speculative/mtp_drafter.cpp): every observed row through fc and the layer's K/V; the query, MLP and
  // head only for each sequence's newest row (S rows) and the K drafts.
  if (in.mtp) {
    const int64_t nh = c.num_heads, nkv = c.num_kv_heads, hd = c.head_dim;
    b.scratch("mtp.cat", {T, 2 * H});
    b.scratch("mtp.x", {T, H});
    b.scratch("mtp.h", {T, H});
    b.scratch("mtp.hidden", {T, H});
    b.scratch("mtp.kv", {2, T, nkv, hd});
    b.scratch("mtp.x_rows", {S, H});
    b.scratch("mtp.h_rows", {S, H});
    b.scratch("mtp.mix", {S, H});
    b.scratch("mtp.q_gate", {S, nh * (c.attn_output_gate ? 2 * hd : hd)});
    b.scratch("mtp.q", {S, nh, hd});
    b.scratch("mtp.o", {S, nh, hd});
    b.scratch("mtp.mlp_gate", {S, c.intermediate_size});
    b.scratch("mtp.mlp_up", {S, c.intermediate_size});
    b.scratch("mtp.draft_x", {S, H});
    b.scratch("mtp.draft_normed", {S, H});
    b.scratch("mtp.logits", {S, in.tp > 1 ? in.draft_head_total : in.draft_head_rows});
    if (in.tp > 1) b.scratch("mtp.logits_part", {S, in.draft_head_rows});  // the rank's share, then gathered
  }
  // Dflash2Drafter (engine/speculative/dflash2_drafter.cpp): append_context over the step's committed rows, then one block
  // forward of S · B rows.
  if (in.dflash2) {
    const Dflash2Config& d = *in.dflash2;
    const int64_t B = d.block_size, rows = S * B, D = B - 1;
    b.scratch("dflash2.ctx", {T, H});
    b.scratch("dflash2.features", {T, H});
    b.scratch("dflash2.k", {std::max(T, rows), d.num_kv_heads, d.head_dim});
    b.scratch("dflash2.v", {std::max(T, rows), d.num_kv_heads, d.head_dim});
    b.scratch("dflash2.x", {rows, H});
    b.scratch("dflash2.h", {rows, H});
    b.scratch("dflash2.mix", {rows, H});
    b.scratch("dflash2.q", {rows, d.num_heads, d.head_dim});
    b.scratch("dflash2.o", {rows, d.num_heads, d.head_dim});
    b.scratch("dflash2.mlp_gate", {rows, d.intermediate_size});
    b.scratch("dflash2.mlp_up", {rows, d.intermediate_size});
    b.scratch("dflash2.sel", {S * D, H});
    b.scratch("dflash2.logits", {S * D, in.tp > 1 ? in.draft_head_total : in.draft_head_rows});
    if (in.tp > 1) b.scratch("dflash2.logits_part", {S * D, in.draft_head_rows});  // the rank's share, then gathered
  }
  return out;
}

}  // namespace ninfer
