// Owns the launchers of the paged-KV kernels (kv_write, paged GQA attention + its split-K combine) and the host-side
// launch plan they share with the glue (engine/backend/cuda/cuda_attention.cpp): tile sizes and the work-item layout.
#pragma once

#include <cstdint>

#include "kernels/attention/attention_plan.h"
#include "kernels/common/kview.h"

namespace ninfer::kern {

// One attention layer's cache as the kernels see it: K and V [blocks, block_size, n_kv, head_dim] as Rows (three
// leading dims, any strides), f32/bf16/f16/i8; for i8 the scales f32 [blocks, block_size, n_kv] as Rows (two
// leading dims, n = n_kv), else data == nullptr.
struct KvCacheView {
  Rows k, v;
  Rows k_scale, v_scale;
};

// kv_write: k, v [T, n_kv, head_dim] f32 (Rows with two leading dims) → cache rows slots[t] (negative skips; the
// host has checked the rest). One warp per (token, kv head). An i8 row holding inf/NaN records
// FaultCode::kKvNonFinite (a = token, b = kv head, c = 0 for K / 1 for V) in `fault`.
void kv_write(cudaStream_t stream, const KvCacheView& cache, const Rows& k, const Rows& v, I32Span slots,
              DeviceFault* fault);

// ---- paged attention ----
// A CTA (128 threads = 4 warps) takes one work item and one kv head: up to `m` query vectors of one sequence (a
// query vector = one (row, query head of the GQA group), numbered row-major: v = (row − q_start[s]) · G + g) over
// the key range [kb, ke). Warps are arranged wq × wk: wq groups of mw vectors each, wk warps splitting the keys.
struct AttnConfig {
  int nc = 1;  // 128-dim column chunks per lane pass: head_dim ≤ 128·nc (1, 2 or 4)
  int mw = 1;  // query vectors per warp (1, 2, 4, 8; mw·nc ≤ 8)
  int wq = 1;  // warps over query vectors
  int wk = 4;  // warps over keys (wq · wk = 4)
  int m() const { return mw * wq; }
  int head_dim_padded() const { return 128 * nc; }
};
constexpr int kAttnMaxHeadDim = 512;
constexpr int kAttnKeyGroup = 8;  // keys a warp scores at once (kAttnSplitAlign is a multiple)

// The configuration for a launch whose largest sequence has `max_vectors` query vectors (new rows · G): decode-like
// batches put the 4 warps on the keys of one small tile, prefill puts them on 4 groups of query vectors.
inline AttnConfig attention_config(int64_t head_dim, int64_t max_vectors) {
  AttnConfig c;
  c.nc = head_dim <= 128 ? 1 : head_dim <= 256 ? 2 : 4;
  const int mw_max = 8 / c.nc;
  if (max_vectors <= mw_max) {
    c.mw = max_vectors <= 1 ? 1 : max_vectors <= 2 ? 2 : max_vectors <= 4 ? 4 : 8;
    c.wq = 1;
    c.wk = 4;
  } else if (max_vectors <= 2 * mw_max) {
    c.mw = mw_max;
    c.wq = 2;
    c.wk = 2;
  } else {
    c.mw = mw_max;
    c.wq = 4;
    c.wk = 1;
  }
  return c;
}

// Partials (the split-K workspace): for slot p, kv head h and tile vector i, index x = (p · n_kv + h) · m + i holds
// the unnormalized output o[x · head_dim_padded ..] and (running max, sum) ml[2x], ml[2x + 1].
inline int64_t attention_partial_floats(int64_t slots, int64_t n_kv, const AttnConfig& c) {
  return slots * n_kv * c.m() * (c.head_dim_padded() + 2);
}

struct AttentionArgs {
  Rows q, out;  // [T, n_heads, head_dim] f32 (two leading dims)
  KvCacheView cache;
  I32Span block_table;  // [S · max_blocks]
  int32_t max_blocks = 0;
  int32_t n_heads = 0, n_kv = 0, head_dim = 0;
  float scale = 1.0f;
  AttnConfig config;
  // The plan (attention_plan.h), written on the device by paged_attention() from q_start / seq_len (device [S + 1] /
  // [S]) into `plan_ws` (attention_plan_ints(bounds) int32): the launches are sized by `bounds` (from the step's
  // shape alone), and CTAs past the planned counts return at once.
  I32Span q_start, seq_len;
  AttnPlanShape plan;
  AttnPlanCounts bounds;
  int32_t* plan_ws = nullptr;
  float* partial = nullptr;  // attention_partial_floats(bounds.slots, n_kv, config) floats
  DeviceFault* fault = nullptr;  // a plan beyond its bounds is recorded here (FaultCode::kPlanOverflow)
  bool vec = false;  // set by paged_attention(): K and V rows admit aligned 4-element loads
  // Set by paged_attention(): where the plan lives in plan_ws (items, combine entries, then the counts).
  int32_t* items = nullptr;
  int32_t* combine = nullptr;
  int32_t* counts = nullptr;  // [3]: items, combine entries, slots
};
// int32 of AttentionArgs::plan_ws for plans within `bounds`.
inline int64_t attention_plan_ints(const AttnPlanCounts& bounds) {
  return static_cast<int64_t>(bounds.items) * kAttnItemInts + static_cast<int64_t>(bounds.combine) * kAttnCombineInts + 4;
}
void paged_attention(cudaStream_t stream, const AttentionArgs& args);

// CTAs of the attention kernel that paged_attention() launches for `config` and a cache of `cache_type` that fit on
// one SM of the current device at once (its registers and shared memory; ≥ 1): the split-K plan sizes its key
// ranges so that one wave fills them.
int attention_ctas_per_sm(const AttnConfig& config, KType cache_type);

}  // namespace ninfer::kern
