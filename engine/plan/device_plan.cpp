#include "engine/plan/device_plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "engine/core/error.h"
#include "engine/model/weight_shard.h"
#include "engine/plan/activation_plan.h"
#include "engine/plan/rank_shard.h"
#include "engine/runtime/kv_cache.h"
#include "engine/speculative/dflash2_drafter.h"
#include "engine/speculative/mtp_drafter.h"

namespace ninfer {

PlanRank plan_rank_view(const DevicePlanInput& in, int rank) {
  const ModelConfig& c = in.config;
  PlanRank pr;
  pr.layout = tp_layout(c, rank, in.tp);
  pr.config = tp_rank_config(c, pr.layout);
  pr.mtp = in.spec == PlanSpec::kMtp;
  pr.dflash2 = in.spec == PlanSpec::kDflash2;
  pr.draft_tokens = in.spec == PlanSpec::kNone ? 0 : in.draft_tokens;
  if (pr.dflash2) {
    pr.dflash2_layout = tp_layout(dflash2_as_model_config(*in.dflash2, c), rank, in.tp);
    pr.local_dflash2 = dflash2_rank_config(*in.dflash2, *pr.dflash2_layout);
  }
  pr.policy = {.mtp = pr.mtp, .dflash2 = pr.dflash2, .draft_lm_head = in.lm_head_draft && in.spec != PlanSpec::kNone,
               .embedding_on_device = in.embedding_on_device};
  return pr;
}

ActivationInput activation_input(const DevicePlanInput& in, const PlanRank& pr, bool device, int64_t nvfp4_max_k,
                                 int64_t draft_head_rows, int64_t draft_head_total) {
  return {.rank_config = pr.config,
          .tp = in.tp,
          .vocab_share = pr.layout.vocab,
          .step = largest_step(in.prefill_chunk, in.max_concurrency, pr.draft_tokens),
          .device = device,
          .w4a4 = in.w4a4,
          .nvfp4_max_k = nvfp4_max_k,
          .mtp = pr.mtp,
          .draft_head_rows = draft_head_rows,
          .draft_head_total = draft_head_total,
          .dflash2 = pr.local_dflash2};
}

uint64_t planned_drafter_cache_bytes(const DevicePlanInput& in, const PlanRank& pr, int64_t max_context) {
  const int32_t K = pr.draft_tokens;
  const DrafterLimits limits{.max_sequences = in.max_concurrency, .max_context = max_context + K, .draft_tokens = K};
  if (pr.mtp) return MtpDrafter::planned_cache_bytes(pr.config, limits, MtpOptions{});
  if (pr.dflash2) return dflash2_cache_bytes(*pr.local_dflash2, limits.max_sequences, limits.max_context);
  return 0;
}

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr uint64_t kMiBytes = uint64_t{1} << 20;

RankPlan plan_rank(const DevicePlanInput& in, int rank, int64_t kv_tokens) {
  const ModelConfig& c = in.config;
  const PlanRank pr = plan_rank_view(in, rank);
  const TpLayout& l = pr.layout;
  const ModelConfig& rc = pr.config;
  const int32_t K = pr.draft_tokens;
  const std::optional<TpLayout>& dl = pr.dflash2_layout;
  const ShardPolicy& policy = pr.policy;
  RankPlan r;
  r.rank = rank;
  r.device = in.devices.empty() ? rank : in.devices[static_cast<size_t>(rank)];
  r.available = in.available_bytes[static_cast<size_t>(rank)];

  int64_t nvfp4_max_k = 0, draft_head_rows = l.vocab, draft_head_total = c.vocab_size;
  bool has_lm_head = false;
  for (const PlanTensor& t : in.tensors) {
    const RankShard s = rank_shard(t, c, l, in.dflash2, dl, policy);
    if (s.placement != ShardPlacement::kSplit && s.placement != ShardPlacement::kReplicated) continue;
    const uint64_t bytes = device_alloc_bytes(s.bytes);
    if (t.section == "main") {
      r.weights += bytes;
      if (s.placement == ShardPlacement::kReplicated) r.replicated_weights += bytes;
    } else {
      r.drafter_weights += bytes;
    }
    if (t.dtype == DType::kNVFP4 && s.shape.size() == 2) nvfp4_max_k = std::max(nvfp4_max_k, s.shape[1]);
    if (t.name == "lm_head.weight") has_lm_head = true;
    if (t.name == "draft_lm_head.weight") draft_head_rows = s.shape[0], draft_head_total = t.shape[0];
  }
  // A tied lm_head is the embedding: one shared copy at TP1 when the embedding is on the device, else the rank's
  // vocabulary rows of it uploaded as the lm_head shard.
  if (c.tie_word_embeddings && !has_lm_head && !(in.embedding_on_device && in.tp == 1))
    for (const PlanTensor& t : in.tensors)
      if (t.name == "model.embed_tokens.weight") {
        const std::vector<int64_t> shape = {l.vocab, t.shape[1]};
        r.weights += device_alloc_bytes(tensor_storage_bytes(t.dtype, shape).value_or(0));
      }

  // KV: per full-attention layer K and V [blocks · block, kv heads, head_dim] (+ f32 scales per row for int8), each
  // one allocation (engine/runtime/kv_cache.cpp).
  const uint64_t kv_rows = static_cast<uint64_t>(kv_tokens * rc.num_kv_heads);
  const uint64_t per_layer = 2 * device_alloc_bytes(kv_rows * static_cast<uint64_t>(rc.head_dim) *
                                                    dtype_element_bytes(in.kv_dtype)) +
                             (in.kv_dtype == DType::kI8 ? 2 * device_alloc_bytes(kv_rows * sizeof(float)) : 0);
  r.kv = static_cast<uint64_t>(rc.num_full_attention_layers()) * per_layer;

  // GDN state: per linear-attention layer one conv [rows, K−1, C] and one recurrent [rows, nv, dk, dv] f32 allocation
  // (engine/runtime/linear_state.cpp); rows = sequences × (1 + K checkpoints) + prefix-cache rows.
  if (rc.num_linear_attention_layers() > 0) {
    const uint64_t rows = static_cast<uint64_t>(in.max_concurrency) * (1 + static_cast<uint64_t>(K)) +
                          static_cast<uint64_t>(in.prefix_state_rows);
    const uint64_t conv = rows * static_cast<uint64_t>((rc.linear_conv_kernel - 1) * rc.linear_conv_dim()) * 4;
    const uint64_t rec = rows * static_cast<uint64_t>(rc.linear_num_value_heads * rc.linear_key_head_dim *
                                                      rc.linear_value_head_dim) * 4;
    r.state = static_cast<uint64_t>(rc.num_linear_attention_layers()) * (device_alloc_bytes(conv) + device_alloc_bytes(rec));
  }

  // The drafter's own caches, as the drafters size them (engine/runtime/engine.cpp drafter_limits: max_context + K).
  r.drafter_caches = planned_drafter_cache_bytes(in, pr, in.max_context);

  const ActivationPlan act = plan_activations(activation_input(in, pr, true, nvfp4_max_k, draft_head_rows,
                                                               draft_head_total));
  r.activations = act.scratch_bytes();
  r.workspaces = act.workspace_bytes();
  r.allowance = device_allowance_bytes(in.tp);
  r.margin = device_margin_bytes(r.available);
  return r;
}

void check_input(const DevicePlanInput& in) {
  if (in.tp < 1) fail(ErrorKind::kInvalidArgument, "memory plan: --tp {} must be at least 1", in.tp);
  if (static_cast<int>(in.available_bytes.size()) != in.tp)
    fail(ErrorKind::kInvalidArgument, "memory plan: {} free-memory values for {} ranks", in.available_bytes.size(), in.tp);
  if (!in.devices.empty() && static_cast<int>(in.devices.size()) != in.tp)
    fail(ErrorKind::kInvalidArgument, "memory plan: {} devices for {} ranks", in.devices.size(), in.tp);
  if (in.kv_block_size <= 0 || in.max_context < 0 || in.max_concurrency <= 0 || in.prefill_chunk <= 0)
    fail(ErrorKind::kInvalidArgument, "memory plan: block size, concurrency and prefill chunk must be positive");
  if (in.spec == PlanSpec::kDflash2 && !in.dflash2)
    fail(ErrorKind::kInvalidArgument, "memory plan: --spec dflash2 without the drafter's config");
  if (in.spec != PlanSpec::kNone && in.draft_tokens < 1)
    fail(ErrorKind::kInvalidArgument, "memory plan: --draft-tokens {} must be at least 1", in.draft_tokens);
}

std::string mib(uint64_t b) { return fmt::format("{:.1f}", b / kMiB); }

}  // namespace

uint64_t device_allowance_bytes(int tp) {
  // Driver-side memory that appears after the free-memory reading: lazily loaded kernel modules, stream/event pools,
  // device printf and malloc heaps, per-thread local memory (128 MiB); HostStaging's device index buffers (8 MiB);
  // CUDA graph pools for the decode shapes (64 MiB, reserved for the graphs issue 18 plans); NCCL's channel buffers
  // and communicator state under TP (256 MiB). cuBLAS: 0, every GEMM is ninfer's own kernel (kernels/gemm/).
  uint64_t bytes = (128 + 8 + 64) * kMiBytes;
  if (tp > 1) bytes += 256 * kMiBytes;
  return bytes;
}

uint64_t device_margin_bytes(uint64_t available) {
  // 1 % of the device's free memory, at least 64 MiB: fragmentation of the arena's 2 MiB classes between scratch
  // regrowths, and what the estimate above does not see.
  return std::max<uint64_t>(64 * kMiBytes, available / 100);
}

bool DevicePlan::fits() const {
  for (const RankPlan& r : ranks)
    if (r.slack() < 0) return false;
  return !ranks.empty();
}

DevicePlan plan_devices(const DevicePlanInput& in) {
  check_input(in);
  DevicePlan p;
  const int64_t tokens = in.kv_capacity > 0 ? in.kv_capacity : int64_t{in.max_concurrency} * in.max_context;
  p.kv_tokens = (tokens + in.kv_block_size - 1) / in.kv_block_size * in.kv_block_size;
  p.max_context = in.max_context;
  p.kv_dtype = in.kv_dtype;
  const TpLayout l0 = tp_layout(in.config, 0, in.tp);
  p.kv_replicated = l0.kv_replicated;
  p.kv_heads_per_rank = l0.kv_heads;
  p.kv_bytes_per_token = in.config.num_full_attention_layers() > 0
                             ? KvCache::bytes_per_token(tp_rank_config(in.config, l0), in.kv_dtype)
                             : 0;
  for (int r = 0; r < in.tp; ++r) p.ranks.push_back(plan_rank(in, r, p.kv_tokens));
  return p;
}

int64_t largest_fitting_context(const DevicePlanInput& in) {
  int64_t lo = 0, hi = in.max_context / in.kv_block_size;
  DevicePlanInput probe = in;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    probe.max_context = mid * in.kv_block_size;
    if (plan_devices(probe).fits()) lo = mid;
    else hi = mid - 1;
  }
  return lo * in.kv_block_size;
}

DevicePlan plan_devices_or_fail(const DevicePlanInput& in) {
  DevicePlan p = plan_devices(in);
  if (p.fits()) return p;
  std::string short_devices;
  for (const RankPlan& r : p.ranks) {
    if (r.slack() >= 0) continue;
    const uint64_t missing = r.total() - r.available;
    short_devices += fmt::format("{}device {} (rank {}): needs {} bytes ({} MiB), {} bytes ({} MiB) available, {} bytes "
                                 "({} MiB) missing",
                                 short_devices.empty() ? "" : "; ", r.device, r.rank, r.total(), mib(r.total()),
                                 r.available, mib(r.available), missing, mib(missing));
  }
  const int64_t fits = largest_fitting_context(in);
  const std::string advice =
      fits > 0 && in.kv_capacity == 0
          ? fmt::format("the largest --max-context that fits is {}", fits)
          : fits > 0 ? fmt::format("the largest --max-context that fits with --kv-capacity {} is {}", in.kv_capacity, fits)
                     : std::string("no --max-context fits with these settings (lower --kv-capacity, --max-concurrency "
                                   "or --prefill-chunk, use a smaller --kv-dtype, more --tp ranks, or no drafter)");
  fail(ErrorKind::kOutOfMemory, "memory plan does not fit at --max-context {}: {}; {}\n{}", in.max_context,
       short_devices, advice, p.table());
}

std::string DevicePlan::table() const {
  std::string s = fmt::format(
      "memory plan per device (MiB): KV {} tokens × {} bytes per token per rank ({}, {} KV head{} per rank{})\n",
      kv_tokens, kv_bytes_per_token, dtype_name(kv_dtype), kv_heads_per_rank, kv_heads_per_rank == 1 ? "" : "s",
      kv_replicated ? ", replicated: fewer KV heads than ranks" : "");
  s += fmt::format("{:>6} {:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9}\n", "device",
                   "rank", "weights", "drafter", "KV", "GDN", "draft-KV", "activ", "workspc", "allowanc", "margin",
                   "total", "available", "slack");
  for (const RankPlan& r : ranks)
    s += fmt::format("{:>6} {:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9.1f}\n", r.device,
                     r.rank, mib(r.weights), mib(r.drafter_weights), mib(r.kv), mib(r.state), mib(r.drafter_caches),
                     mib(r.activations), mib(r.workspaces), mib(r.allowance), mib(r.margin), mib(r.total()),
                     mib(r.available), r.slack() / kMiB);
  return s;
}

}  // namespace ninfer
