// Owns the launchers of the paged-KV kernels (kv_write, paged GQA attention + its split-K combine) and the host-side
// launch plan they share with the glue (engine/backend/cuda/cuda_attention.cpp): tile sizes and the work-item layout.
#pragma once

#include <cstdint>

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
constexpr int kAttnKeyGroup = 8;  // keys a warp scores at once; split ranges are multiples of kAttnSplitAlign
constexpr int kAttnSplitAlign = 64;

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

// Work item of the attention kernel (kAttnItemInts int32 each): sequence s, its first query vector v0 and count nv
// (≤ m), the key range [kb, ke), part (−1: write `out` directly; else the partial slot this split writes, see
// below), pos0 = the position of the sequence's first new row (seq_len − n_new), row0 = q_start[s].
constexpr int kAttnItemInts = 8;
// Combine entry (kAttnCombineInts int32 each): a tile split over ns items whose partial slots are part0 …
// part0 + ns − 1: v0, nv, part0, ns, row0.
constexpr int kAttnCombineInts = 5;
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
  I32Span items;    // n_items · kAttnItemInts
  I32Span combine;  // n_combine · kAttnCombineInts (empty when nothing is split)
  int64_t n_items = 0, n_combine = 0, n_slots = 0;
  float* partial = nullptr;  // attention_partial_floats(n_slots, n_kv, config) floats
  AttnConfig config;
  bool vec = false;  // set by paged_attention(): K and V rows admit aligned 4-element loads
};
void paged_attention(cudaStream_t stream, const AttentionArgs& args);

// CTAs of the attention kernel that paged_attention() launches for `config` and a cache of `cache_type` that fit on
// one SM of the current device at once (its registers and shared memory; ≥ 1): the split-K plan sizes its key
// ranges so that one wave fills them.
int attention_ctas_per_sm(const AttnConfig& config, KType cache_type);

}  // namespace ninfer::kern
