#include "engine/speculative/dflash2_drafter.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/model/model_weights.h"
#include "engine/model/swiglu_mlp.h"
#include "engine/model/vocab_parallel_head.h"

namespace ninfer {
namespace {

// The drafter's layers as a ModelConfig, so the runtime's paged KvCache holds its context K/V.
ModelConfig cache_shape(const Dflash2Config& c) {
  ModelConfig m;
  m.num_layers = c.num_layers;
  m.layer_types.assign(static_cast<size_t>(c.num_layers), LayerType::kFullAttention);
  m.num_heads = c.num_heads;
  m.num_kv_heads = c.num_kv_heads;
  m.head_dim = c.head_dim;
  m.hidden_size = c.hidden_size;
  return m;
}

}  // namespace

Dflash2Drafter::Dflash2Drafter(const Dflash2Config& config, Dflash2Weights weights, Tensor embed, Dflash2Head head,
                               Backend& backend, const Dflash2CacheOptions& cache, Communicator& comm)
    : config_(config),
      w_(std::move(weights)),
      embed_(embed),
      head_(std::move(head)),
      backend_(backend),
      comm_(comm),
      scratch_(backend) {
  if (head_.rows == 0) head_.rows = head_.weight.dim(0);
  if (embed_.ndim != 2 || embed_.dim(1) != config_.hidden_size)
    fail(ErrorKind::kInvalidArgument, "DFlash2: target embedding {} must be [V, {}]", embed_.describe(),
         config_.hidden_size);
  if (head_.weight.ndim != 2 || head_.weight.dim(1) != config_.hidden_size)
    fail(ErrorKind::kInvalidArgument, "DFlash2: head {} must be [V', {}]", head_.weight.describe(),
         config_.hidden_size);
  if (!head_.token_ids.empty() && static_cast<int64_t>(head_.token_ids.size()) != head_.rows)
    fail(ErrorKind::kInvalidArgument, "DFlash2: head has {} rows but {} token ids", head_.rows, head_.token_ids.size());
  if ((comm_.size() == 1) != (head_.weight.dim(0) == head_.rows))
    fail(ErrorKind::kInvalidArgument, "DFlash2: a head share of {} of {} rows on a group of {} ranks",
         head_.weight.dim(0), head_.rows, comm_.size());
  if (static_cast<int64_t>(w_.layers.size()) != config_.num_layers)
    fail(ErrorKind::kInvalidArgument, "DFlash2: {} layer weight sets for {} layers", w_.layers.size(),
         config_.num_layers);
  kv_ = std::make_unique<KvCache>(backend_, cache_shape(config_),
                                  KvCacheConfig{cache.block_size, cache.num_blocks, DType::kF32});
}

int64_t Dflash2Drafter::context_length(SeqId seq) const {
  auto it = length_.find(seq);
  return it == length_.end() ? 0 : it->second;
}

void Dflash2Drafter::reserve(SeqId seq, int64_t tokens) {
  if (!kv_->reserve(seq, tokens))
    fail(ErrorKind::kOutOfMemory, "DFlash2 cache: sequence {} needs {} positions; {} of {} blocks of {} are free",
         seq, tokens, kv_->free_blocks(), kv_->total_blocks(), kv_->block_size());
}

void Dflash2Drafter::truncate(SeqId seq, int64_t tokens) {
  auto it = length_.find(seq);
  if (it == length_.end() || tokens >= it->second) return;
  it->second = std::max<int64_t>(0, tokens);
  kv_->truncate(seq, it->second);
}

void Dflash2Drafter::release(SeqId seq) {
  length_.erase(seq);
  kv_->release(seq);
}

void Dflash2Drafter::write_kv(int64_t l, const Tensor& x, std::span<const int32_t> positions,
                              std::span<const int32_t> slots) {
  const Dflash2Config& c = config_;
  const Dflash2LayerWeights& lw = w_.layers[static_cast<size_t>(l)];
  const int64_t T = x.dim(0);
  Tensor k = scratch_.get("k", {T, c.num_kv_heads, c.head_dim});
  Tensor v = scratch_.get("v", {T, c.num_kv_heads, c.head_dim});
  backend_.linear(k.reshape({T, c.num_kv_heads * c.head_dim}), x, lw.k_proj);
  backend_.rms_norm(k, k, lw.k_norm, c.rms_norm_eps, 0.0f);
  backend_.rope(k, positions, c.head_dim, c.rope_theta);
  backend_.linear(v.reshape({T, c.num_kv_heads * c.head_dim}), x, lw.v_proj);
  backend_.kv_write(kv_->layer(l), k, v, slots);
}

void Dflash2Drafter::append_context(std::span<const SeqId> seqs, std::span<const int32_t> rows,
                                    std::span<const Tensor> features) {
  const Dflash2Config& c = config_;
  if (seqs.size() != rows.size())
    fail(ErrorKind::kInvalidArgument, "DFlash2 append_context: {} sequences but {} row counts", seqs.size(),
         rows.size());
  if (features.size() != c.target_layer_ids.size())
    fail(ErrorKind::kInvalidArgument, "DFlash2 append_context: {} feature tensors for {} target layers",
         features.size(), c.target_layer_ids.size());
  int64_t T = 0;
  for (int32_t r : rows) {
    if (r < 0) fail(ErrorKind::kInvalidArgument, "DFlash2 append_context: negative row count {}", r);
    T += r;
  }
  if (T == 0) return;
  for (size_t i = 0; i < features.size(); ++i)
    if (features[i].ndim != 2 || features[i].dim(0) != T || features[i].dim(1) != c.hidden_size)
      fail(ErrorKind::kInvalidArgument, "DFlash2 append_context: features[{}] (target layer {}) is {}, need [{}, {}]",
           i, c.target_layer_ids[i], features[i].describe(), T, c.hidden_size);

  std::vector<int32_t> positions, slots;
  positions.reserve(static_cast<size_t>(T));
  slots.reserve(static_cast<size_t>(T));
  for (size_t s = 0; s < seqs.size(); ++s) {
    const int64_t start = context_length(seqs[s]);
    reserve(seqs[s], start + rows[s] + c.block_size);
    for (int64_t i = 0; i < rows[s]; ++i) {
      positions.push_back(static_cast<int32_t>(start + i));
      slots.push_back(kv_->slot(seqs[s], start + i));
    }
  }
  // c_t = hidden_norm(fc · cat_i features[i]_t): fc's column block i multiplies features[i].
  Tensor ctx = scratch_.get("ctx", {T, c.hidden_size});
  for (size_t i = 0; i < features.size(); ++i) {
    const int64_t H = c.hidden_size, elem = static_cast<int64_t>(dtype_element_bytes(w_.fc.dtype));
    Tensor wi = Tensor::strided(static_cast<std::byte*>(w_.fc.data) + static_cast<int64_t>(i) * H * elem,
                                w_.fc.dtype, {H, H}, {w_.fc.row_stride(), 1}, w_.fc.device);
    Tensor fi = features[i];
    if (fi.device != backend_.device()) {  // host features (the engine's capture) on a device backend
      fi = scratch_.get("features", {T, H});
      backend_.copy(fi, features[i]);
    }
    backend_.linear(ctx, fi, wi, /*accumulate=*/i > 0);
  }
  backend_.rms_norm(ctx, ctx, w_.hidden_norm, c.rms_norm_eps, 0.0f);
  for (int64_t l = 0; l < c.num_layers; ++l) write_kv(l, ctx, positions, slots);
  backend_.synchronize();
  for (size_t s = 0; s < seqs.size(); ++s) length_[seqs[s]] = context_length(seqs[s]) + rows[s];
}

void Dflash2Drafter::propose(std::span<const SeqId> seqs, std::span<const int32_t> anchors, std::span<int32_t> tokens,
                             std::span<float> logits) {
  const Dflash2Config& c = config_;
  const int64_t S = static_cast<int64_t>(seqs.size()), B = c.block_size, D = B - 1, H = c.hidden_size;
  const int64_t V = head_rows();
  if (S == 0) return;
  if (static_cast<int64_t>(anchors.size()) != S)
    fail(ErrorKind::kInvalidArgument, "DFlash2 propose: {} sequences but {} anchors", S, anchors.size());
  if (static_cast<int64_t>(tokens.size()) != S * D)
    fail(ErrorKind::kInvalidArgument, "DFlash2 propose: tokens span holds {}, {} sequences × {} drafts need {}",
         tokens.size(), S, D, S * D);
  if (!logits.empty() && static_cast<int64_t>(logits.size()) != S * D * V)
    fail(ErrorKind::kInvalidArgument, "DFlash2 propose: logits span holds {} floats, need {} × {} × {}", logits.size(),
         S, D, V);
  for (int64_t s = 0; s < S; ++s)
    if (anchors[s] < 0 || anchors[s] >= embed_.dim(0))
      fail(ErrorKind::kInvalidArgument, "DFlash2 propose: anchor token {} of sequence {} is outside the vocab [0, {})",
           anchors[s], seqs[s], embed_.dim(0));

  // Rows: the S anchors first, then each sequence's B−1 mask rows (so the scored rows are one contiguous slice).
  // Every row is its own "sequence" of one new token for the attention op, with seq_len = context + B, so it sees
  // the whole context and the whole block (bidirectional inside the block).
  const int64_t R = S * B;
  const size_t rows = static_cast<size_t>(R);
  std::vector<int32_t> positions(rows), slots(rows), seq_len(rows), q_start(rows + 1);
  int32_t max_blocks = 0;
  for (int64_t s = 0; s < S; ++s) {
    reserve(seqs[s], context_length(seqs[s]) + B);
    max_blocks = std::max<int32_t>(max_blocks, static_cast<int32_t>(kv_->blocks(seqs[s]).size()));
  }
  std::vector<int32_t> table(static_cast<size_t>(R * max_blocks), 0);
  for (int64_t s = 0; s < S; ++s) {
    const int64_t ctx = context_length(seqs[s]);
    const auto& blocks = kv_->blocks(seqs[s]);
    for (int64_t j = 0; j < B; ++j) {
      const int64_t r = j == 0 ? s : S + s * D + (j - 1);
      positions[r] = static_cast<int32_t>(ctx + j);
      slots[r] = kv_->slot(seqs[s], ctx + j);
      seq_len[r] = static_cast<int32_t>(ctx + B);
      std::copy(blocks.begin(), blocks.end(), table.begin() + r * max_blocks);
    }
  }
  for (int64_t r = 0; r <= R; ++r) q_start[r] = static_cast<int32_t>(r);
  const PagedKv paged{q_start, seq_len, table, max_blocks};

  Tensor x = scratch_.get("x", {R, H});
  Tensor h = scratch_.get("h", {R, H});
  Tensor mix = scratch_.get("mix", {R, H});
  backend_.embedding(x.slice0(0, S), embed_, anchors);
  const std::vector<int32_t> zeros(static_cast<size_t>(S * D), 0);
  backend_.embedding(x.slice0(S, R), w_.mask_embedding, zeros);

  const int64_t nh = c.num_heads, hd = c.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // Residual adds fused with the norm after them (add_rms_norm), as in Model::body.
  if (c.num_layers > 0) backend_.rms_norm(h, x, w_.layers.front().input_norm, c.rms_norm_eps, 0.0f);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const Dflash2LayerWeights& lw = w_.layers[static_cast<size_t>(l)];
    Tensor q = scratch_.get("q", {R, nh, hd});
    backend_.linear(q.reshape({R, nh * hd}), h, lw.q_proj);
    backend_.rms_norm(q, q, lw.q_norm, c.rms_norm_eps, 0.0f);
    backend_.rope(q, positions, hd, c.rope_theta);
    write_kv(l, h, positions, slots);
    Tensor o = scratch_.get("o", {R, nh, hd});
    backend_.attention(o, q, kv_->layer(l), paged, scale);
    backend_.linear(mix, o.reshape({R, nh * hd}), lw.o_proj);
    comm_.all_reduce_sum(mix, backend_);  // o_proj is row-parallel over the rank's heads under TP
    backend_.add_rms_norm(x, h, mix, lw.post_norm, c.rms_norm_eps, 0.0f);
    swiglu_mlp(backend_, scratch_, lw.gate_proj, lw.up_proj, lw.down_proj, h, mix);
    comm_.all_reduce_sum(mix, backend_);  // down_proj too
    if (l + 1 < c.num_layers)
      backend_.add_rms_norm(x, h, mix, w_.layers[static_cast<size_t>(l + 1)].input_norm, c.rms_norm_eps, 0.0f);
    else backend_.add(x, x, mix);
  }
  Tensor sel = scratch_.get("sel", {S * D, H});
  backend_.rms_norm(sel, x.slice0(S, R), w_.final_norm, c.rms_norm_eps, 0.0f);
  // The first maximum of each row, taken where the scores are (S·D ids come to the host, not S·D rows; under TP only
  // each rank's best pair is gathered). Every rank takes the same ids.
  const std::span<int32_t> best = tokens.first(static_cast<size_t>(S * D));
  vocab_parallel_argmax(backend_, comm_, scratch_, sel, head_.weight, V, Tensor{}, best, logits);
  if (!head_.token_ids.empty())
    for (int32_t& id : best) id = head_.token_ids[static_cast<size_t>(id)];
}

std::unique_ptr<Dflash2Drafter> make_dflash2_drafter(const Artifact& artifact, const ModelConfig& target,
                                                     const Tensor& target_embed, const Tensor& target_lm_head,
                                                     bool use_draft_head, int64_t max_sequences, int64_t max_context,
                                                     WeightStore& store, const DrafterRank& rank) {
  Dflash2Config config = load_dflash2_config(artifact, target);
  Dflash2Weights weights = bind_dflash2_weights(artifact, config);
  Dflash2Head head{target_lm_head, {}};
  if (use_draft_head) {
    const TensorInfo* w = artifact.find("draft_lm_head.weight");
    const TensorInfo* ids = artifact.find("draft_lm_head.ids");
    if (w == nullptr || ids == nullptr)
      fail(ErrorKind::kNotFound, "{}: --lm-head-draft needs draft_lm_head.weight and draft_lm_head.ids",
           artifact.path());
    if (w->shape.size() != 2 || w->shape[1] != target.hidden_size || ids->dtype != DType::kI32 ||
        ids->shape.size() != 1 || ids->shape[0] != w->shape[0])
      fail(ErrorKind::kCorrupt, "{}: draft_lm_head.weight [{}] / ids {} [{}] must be [V', {}] and i32 [V']",
           artifact.path(), fmt::join(w->shape, ","), dtype_name(ids->dtype), fmt::join(ids->shape, ","),
           target.hidden_size);
    head.weight = tensor_view(artifact, *w);
    const auto* p = reinterpret_cast<const int32_t*>(artifact.data(*ids).data());
    head.token_ids.assign(p, p + ids->shape[0]);
    for (int32_t id : head.token_ids)
      if (id < 0 || id >= target.vocab_size)
        fail(ErrorKind::kCorrupt, "{}: draft_lm_head.ids holds {} outside the vocab [0, {})", artifact.path(), id,
             target.vocab_size);
  }
  head.rows = head.weight.dim(0);
  const char* head_name = use_draft_head ? "draft_lm_head.weight" : "lm_head.weight";
  if (rank.size > 1) {
    if (!rank.comm) fail(ErrorKind::kInternal, "DFlash2 drafter shard {} of {} without a communicator", rank.rank, rank.size);
    const TpLayout layout = tp_layout(dflash2_as_model_config(config, target), rank.rank, rank.size);
    weights = shard_dflash2_weights(weights, config, layout);
    WeightShard shard(weights.owned);
    head.weight = shard.rows(head.weight, tp_rows(head.rows, rank.rank, rank.size), head_name);
    config = dflash2_rank_config(config, layout);
  }
  head.weight = store.place(head.weight, head_name);
  return std::make_unique<Dflash2Drafter>(config, placed(std::move(weights), store, "dflash2"),
                                          // under TP the embedding stays in host memory, as the target's (placed_shard)
                                          rank.size > 1 ? target_embed : store.place(target_embed, "model.embed_tokens.weight"),
                                          std::move(head),
                                          store.backend(), dflash2_cache_options(config, max_sequences, max_context),
                                          rank.comm ? *rank.comm : single_rank_communicator());
}

Dflash2CacheOptions dflash2_cache_options(const Dflash2Config& config, int64_t max_sequences, int64_t max_context) {
  Dflash2CacheOptions cache;
  cache.num_blocks = max_sequences * ((max_context + config.block_size + cache.block_size - 1) / cache.block_size);
  return cache;
}

uint64_t dflash2_cache_bytes(const Dflash2Config& config, int64_t max_sequences, int64_t max_context) {
  const Dflash2CacheOptions cache = dflash2_cache_options(config, max_sequences, max_context);
  return static_cast<uint64_t>(cache.num_blocks * cache.block_size) *
         KvCache::bytes_per_token(cache_shape(config), DType::kF32);
}

}  // namespace ninfer
