#include "engine/speculative/mtp_drafter.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "engine/core/error.h"
#include "engine/model/swiglu_mlp.h"
#include "engine/model/vocab_parallel_head.h"
#include "engine/model/weight_shard.h"

namespace ninfer {

namespace {

// The artifact's draft_lm_head: ids i32 [N], ascending, inside the vocabulary; weight [N, H].
void bind_draft_head(const Artifact& a, const ModelConfig& c, MtpWeights& w) {
  const TensorInfo* ids = a.find("draft_lm_head.ids");
  const TensorInfo* weight = a.find("draft_lm_head.weight");
  if (!ids || !weight)
    fail(ErrorKind::kNotFound,
         "{}: --lm-head-draft needs the artifact's draft_lm_head section (draft_lm_head.ids, draft_lm_head.weight); "
         "this artifact has {} (add it with ninfer-pack --from {} --draft-vocab N --draft-corpus PATH -o OUT)",
         a.path(), ids ? "no draft_lm_head.weight" : "no draft_lm_head.ids", a.path());
  if (ids->dtype != DType::kI32 || ids->shape.size() != 1)
    fail(ErrorKind::kCorrupt, "{}: draft_lm_head.ids must be i32 [N], found {} of rank {}", a.path(),
         dtype_name(ids->dtype), ids->shape.size());
  const int64_t n = ids->shape[0];
  if (weight->shape != std::vector<int64_t>{n, c.hidden_size})
    fail(ErrorKind::kCorrupt, "{}: draft_lm_head.weight must be [{}, {}] (draft_lm_head.ids has {} ids), found [{}]",
         a.path(), n, c.hidden_size, n, fmt::join(weight->shape, ", "));
  w.head_ids.resize(static_cast<size_t>(n));
  std::memcpy(w.head_ids.data(), a.data(*ids).data(), w.head_ids.size() * sizeof(int32_t));
  for (size_t i = 0; i < w.head_ids.size(); ++i) {
    const int32_t id = w.head_ids[i];
    if (id < 0 || id >= c.vocab_size || (i > 0 && id <= w.head_ids[i - 1]))
      fail(ErrorKind::kCorrupt, "{}: draft_lm_head.ids[{}] = {} (ids must ascend inside the vocabulary of {})",
           a.path(), i, id, c.vocab_size);
  }
  w.head = tensor_view(a, *weight);
}

}  // namespace

MtpWeights MtpWeights::bind(const Artifact& a, const ModelConfig& c, bool lm_head_draft) {
  if (c.mtp_num_layers == 0 || !a.find("mtp.fc.weight"))
    fail(ErrorKind::kNotFound,
         "{}: --spec mtp needs the artifact's mtp section (mtp.fc.weight, mtp.layers.0.*; config "
         "mtp_num_hidden_layers {}); this artifact has none",
         a.path(), c.mtp_num_layers);
  if (c.mtp_num_layers != 1)
    fail(ErrorKind::kUnsupported, "{}: mtp_num_hidden_layers is {}; the MTP drafter runs exactly one MTP layer",
         a.path(), c.mtp_num_layers);
  auto get = [&](const std::string& name) { return tensor_view(a, a.require(name)); };
  MtpWeights w;
  w.pre_fc_norm_embedding = get("mtp.pre_fc_norm_embedding.weight");
  w.pre_fc_norm_hidden = get("mtp.pre_fc_norm_hidden.weight");
  w.fc = get("mtp.fc.weight");
  w.norm = get("mtp.norm.weight");
  const std::string p = "mtp.layers.0.";
  w.layer.type = LayerType::kFullAttention;
  w.layer.input_norm = get(p + "input_layernorm.weight");
  w.layer.post_norm = get(p + "post_attention_layernorm.weight");
  w.layer.gate_proj = get(p + "mlp.gate_proj.weight");
  w.layer.up_proj = get(p + "mlp.up_proj.weight");
  w.layer.down_proj = get(p + "mlp.down_proj.weight");
  w.layer.attn = {get(p + "self_attn.q_proj.weight"), get(p + "self_attn.k_proj.weight"),
                  get(p + "self_attn.v_proj.weight"), get(p + "self_attn.o_proj.weight"),
                  get(p + "self_attn.q_norm.weight"), get(p + "self_attn.k_norm.weight")};
  w.embed = get("model.embed_tokens.weight");
  if (lm_head_draft) bind_draft_head(a, c, w);
  else w.head = a.find("lm_head.weight") ? get("lm_head.weight") : w.embed;
  w.head_rows = w.head.dim(0);
  return w;
}

MtpWeights shard_mtp_weights(const MtpWeights& full, const ModelConfig& config, int rank, int size) {
  const TpLayout layout = tp_layout(config, rank, size);
  MtpWeights w = full;
  WeightShard shard(w.owned);
  w.layer = shard_layer(shard, full.layer, config, layout, "mtp.layers.0.");
  w.head = shard.rows(full.head, tp_rows(full.head_rows, rank, size), full.head_ids.empty() ? "lm_head" : "draft_lm_head");
  return w;
}

namespace {

// The MTP layer's own cache: one full-attention layer of the target's shape.
ModelConfig mtp_cache_shape(const ModelConfig& config) {
  ModelConfig kv_config = config;
  kv_config.num_layers = 1;
  kv_config.layer_types = {LayerType::kFullAttention};
  return kv_config;
}

KvCacheConfig mtp_cache_config(const DrafterLimits& limits, const MtpOptions& options) {
  const int64_t bs = options.kv_block_size;
  // A sequence's drafts reach max_context + draft_tokens − 1 positions (scratch rows past the committed ones).
  const int64_t blocks_per_seq = (limits.max_context + limits.draft_tokens + bs - 1) / bs;
  return {.block_size = bs, .num_blocks = blocks_per_seq * limits.max_sequences, .dtype = DType::kF32};
}

// last_: each sequence's newest MTP output row.
size_t last_bytes(const ModelConfig& config, const DrafterLimits& limits) {
  return static_cast<size_t>(limits.max_sequences * config.hidden_size) * sizeof(float);
}

}  // namespace

uint64_t MtpDrafter::planned_cache_bytes(const ModelConfig& config, const DrafterLimits& limits,
                                         const MtpOptions& options) {
  const KvCacheConfig kv = mtp_cache_config(limits, options);
  return static_cast<uint64_t>(kv.num_blocks * kv.block_size) * KvCache::bytes_per_token(mtp_cache_shape(config), kv.dtype) +
         last_bytes(config, limits);
}

uint64_t MtpDrafter::cache_bytes() const { return kv_->allocated_bytes() + last_.bytes; }

MtpDrafter::MtpDrafter(const ModelConfig& config, MtpWeights weights, Backend& backend, const DrafterLimits& limits,
                       const MtpOptions& options, Communicator& comm)
    : config_(config), w_(std::move(weights)), backend_(backend), comm_(comm), limits_(limits), options_(options),
      scratch_(backend) {
  if (config.arch != Architecture::kQwen3_5)
    fail(ErrorKind::kUnsupported, "MTP drafter: the target is {}, the MTP layer is Qwen3.5's",
         architecture_name(config.arch));
  if (limits.max_sequences <= 0 || limits.max_context <= 0 || limits.draft_tokens <= 0)
    fail(ErrorKind::kInvalidArgument, "MTP drafter: max_sequences {}, max_context {}, draft_tokens {} must be positive",
         limits.max_sequences, limits.max_context, limits.draft_tokens);
  features_ = options.hidden == MtpHidden::kPostFinalNorm ? FeatureSpec{{}, true}
                                                          : FeatureSpec{{config.num_layers - 1}, false};
  kv_ = std::make_unique<KvCache>(backend, mtp_cache_shape(config), mtp_cache_config(limits, options));
  last_ = backend.alloc(last_bytes(config, limits));
  for (int32_t s = limits.max_sequences - 1; s >= 0; --s) free_slots_.push_back(s);
}

MtpDrafter::SeqState& MtpDrafter::state(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) fail(ErrorKind::kInvalidArgument, "MTP drafter: sequence {} was never added", seq);
  return it->second;
}

const MtpDrafter::SeqState& MtpDrafter::state(SeqId seq) const {
  return const_cast<MtpDrafter*>(this)->state(seq);
}

int64_t MtpDrafter::held(SeqId seq) const { return state(seq).held; }

void MtpDrafter::add_sequence(SeqId seq) {
  if (seqs_.count(seq)) fail(ErrorKind::kInvalidArgument, "MTP drafter: sequence {} is already added", seq);
  if (free_slots_.empty())
    fail(ErrorKind::kOutOfMemory, "MTP drafter: sequence {} does not fit; it holds {} sequences at once", seq,
         limits_.max_sequences);
  seqs_[seq] = SeqState{free_slots_.back(), 0};
  free_slots_.pop_back();
}

void MtpDrafter::release(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  kv_->release(seq);
  free_slots_.push_back(it->second.slot);
  seqs_.erase(it);
}

void MtpDrafter::add_step_sequence(Step& step, SeqId seq, int64_t start, std::span<const int32_t> tokens) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (start + n > limits_.max_context + limits_.draft_tokens)
    fail(ErrorKind::kInvalidArgument, "MTP drafter: sequence {} reaches position {}, past max_context {} + {} drafts",
         seq, start + n, limits_.max_context, limits_.draft_tokens);
  if (!kv_->reserve(seq, start + n))
    fail(ErrorKind::kOutOfMemory, "MTP drafter: no KV blocks left for sequence {} at {} positions", seq, start + n);
  if (step.q_start.empty()) step.q_start.push_back(0);
  for (int64_t i = 0; i < n; ++i) {
    step.tokens.push_back(tokens[static_cast<size_t>(i)]);
    step.positions.push_back(static_cast<int32_t>(start + i));
    step.slots.push_back(kv_->slot(seq, start + i));
  }
  step.q_start.push_back(static_cast<int32_t>(step.tokens.size()));
  step.seq_len.push_back(static_cast<int32_t>(start + n));
  step.seqs.push_back(seq);
}

void MtpDrafter::finish_step(Step& step) const {
  step.max_blocks = 0;
  for (SeqId seq : step.seqs)
    step.max_blocks = std::max(step.max_blocks, static_cast<int32_t>(kv_->blocks(seq).size()));
  step.table.assign(step.seqs.size() * static_cast<size_t>(step.max_blocks), 0);
  for (size_t i = 0; i < step.seqs.size(); ++i) {
    const std::vector<int32_t>& blocks = kv_->blocks(step.seqs[i]);
    std::copy(blocks.begin(), blocks.end(), step.table.begin() + static_cast<std::ptrdiff_t>(i * step.max_blocks));
  }
}

Tensor MtpDrafter::forward(const Step& step, const Tensor& hidden, bool all_rows) {
  const ModelConfig& c = config_;
  const int64_t T = static_cast<int64_t>(step.tokens.size()), H = c.hidden_size;
  const int64_t S = static_cast<int64_t>(step.seqs.size());
  constexpr float kNormOffset = 1.0f;  // Qwen3.5's zero-centred (1 + w) RMSNorm, as every MTP norm
  Tensor cat = scratch_.get("cat", {T, 2 * H});  // fc input: [norm(embed(x_{p+1})) | norm(h_p)]
  Tensor e = Tensor::strided(cat.data, DType::kF32, {T, H}, {2 * H, 1}, cat.device);
  Tensor hn = Tensor::strided(static_cast<float*>(cat.data) + H, DType::kF32, {T, H}, {2 * H, 1}, cat.device);
  backend_.embedding(e, w_.embed, step.tokens);
  backend_.rms_norm(e, e, w_.pre_fc_norm_embedding, c.rms_norm_eps, kNormOffset);
  backend_.rms_norm(hn, hidden, w_.pre_fc_norm_hidden, c.rms_norm_eps, kNormOffset);
  Tensor x = scratch_.get("x", {T, H});
  Tensor h = scratch_.get("h", {T, H});
  backend_.linear(x, cat, w_.fc);
  backend_.rms_norm(h, x, w_.layer.input_norm, c.rms_norm_eps, kNormOffset);
  write_kv(h, step);
  // Every row's K/V is in the cache now; the rest of the layer runs only for the rows whose output is read: all of
  // them, or the newest of each sequence (what the next draft is conditioned on).
  Query query{step.positions, step.q_start};
  if (!all_rows && T > S) {
    query_rows_.resize(static_cast<size_t>(S));
    query_positions_.resize(static_cast<size_t>(S));
    query_start_.resize(static_cast<size_t>(S + 1));
    for (int64_t s = 0; s < S; ++s) {
      query_rows_[static_cast<size_t>(s)] = step.q_start[static_cast<size_t>(s + 1)] - 1;
      query_positions_[static_cast<size_t>(s)] = step.positions[static_cast<size_t>(query_rows_[static_cast<size_t>(s)])];
      query_start_[static_cast<size_t>(s)] = static_cast<int32_t>(s);
    }
    query_start_[static_cast<size_t>(S)] = static_cast<int32_t>(S);
    Tensor xs = scratch_.get("x_rows", {S, H}), hs = scratch_.get("h_rows", {S, H});
    backend_.gather_rows(xs, x, query_rows_);
    backend_.gather_rows(hs, h, query_rows_);
    x = xs, h = hs;
    query = {query_positions_, query_start_};
  }
  Tensor mix = scratch_.get("mix", {x.dim(0), H});
  attend(h, mix, query, step);
  backend_.add_rms_norm(x, h, mix, w_.layer.post_norm, c.rms_norm_eps, kNormOffset);
  swiglu_mlp(backend_, scratch_, w_.layer.gate_proj, w_.layer.up_proj, w_.layer.down_proj, h, mix);
  comm_.all_reduce_sum(mix, backend_);  // down_proj is row-parallel under TP: the ranks' partial sums
  backend_.add(x, x, mix);
  return x;
}

void MtpDrafter::write_kv(const Tensor& h, const Step& step) {
  const ModelConfig& c = config_;
  const int64_t T = h.dim(0), kv_heads = c.num_kv_heads, d = c.head_dim;
  const AttentionWeights& w = w_.layer.attn;
  Tensor kv = scratch_.get("kv", {2, T, kv_heads, d});  // [k; v]
  Tensor k = kv.slice0(0, 1).reshape({T, kv_heads, d}), v = kv.slice0(1, 2).reshape({T, kv_heads, d});
  backend_.linear(k.reshape({T, kv_heads * d}), h, w.k_proj);
  backend_.linear(v.reshape({T, kv_heads * d}), h, w.v_proj);
  backend_.rms_norm(k, k, w.k_norm, c.rms_norm_eps, 1.0f);
  backend_.rope(k, step.positions, c.rotary_dim, c.rope_theta);
  backend_.kv_write(kv_->layer(0), k, v, step.slots);
}

// The MTP layer's gated attention for the query rows: q_proj emits [q | gate] per head, q (1 + w) norm, partial RoPE
// at the row's position, softmax attention over the drafter's own cache, sigmoid output gate, o_proj.
void MtpDrafter::attend(const Tensor& h, const Tensor& out, const Query& query, const Step& step) {
  const ModelConfig& c = config_;
  const int64_t R = h.dim(0), heads = c.num_heads, d = c.head_dim;
  const int64_t row = c.attn_output_gate ? 2 * heads * d : heads * d;
  const int64_t head_stride = row / heads;
  const AttentionWeights& w = w_.layer.attn;
  Tensor qg = scratch_.get("q_gate", {R, row});
  backend_.linear(qg, h, w.q_proj);
  Tensor q = scratch_.get("q", {R, heads, d});
  backend_.rms_norm(q, Tensor::strided(qg.data, DType::kF32, {R, heads, d}, {row, head_stride, 1}, qg.device), w.q_norm,
                    c.rms_norm_eps, 1.0f);
  backend_.rope(q, query.positions, c.rotary_dim, c.rope_theta);
  Tensor o = scratch_.get("o", {R, heads, d});
  backend_.attention(o, q, kv_->layer(0), PagedKv{query.q_start, step.seq_len, step.table, step.max_blocks},
                     1.0f / std::sqrt(static_cast<float>(d)));
  if (c.attn_output_gate)
    backend_.sigmoid_mul(o, o, Tensor::strided(static_cast<float*>(qg.data) + d, DType::kF32, {R, heads, d},
                                               {row, head_stride, 1}, qg.device));
  backend_.linear(out, o.reshape({R, heads * d}), w.o_proj);
  comm_.all_reduce_sum(out, backend_);  // o_proj is row-parallel over the rank's heads under TP
}

void MtpDrafter::score(const Tensor& x, const Tensor& normed, std::span<int32_t> ids, std::span<float> logits) {
  const int64_t R = x.dim(0), V = head_rows();
  backend_.rms_norm(normed, x, w_.norm, config_.rms_norm_eps, 1.0f);
  // The first maximum of each row (ties go to the lower id), taken where the scores are: R ids come to the host,
  // not R rows of the head's width; under TP only each rank's best pair is gathered. Every rank takes the same ids.
  const std::span<int32_t> best = ids.first(static_cast<size_t>(R));
  vocab_parallel_argmax(backend_, comm_, scratch_, normed, w_.head, V, Tensor{}, best, logits);
  if (!w_.head_ids.empty())
    for (int32_t& id : best) id = w_.head_ids[static_cast<size_t>(id)];
}

void MtpDrafter::observe(std::span<const DraftRows> rows) { observe(rows, {}); }

void MtpDrafter::observe(std::span<const DraftRows> rows, std::span<float> logits) {
  const int64_t H = config_.hidden_size;
  Step step;
  std::vector<const DraftRows*> used;
  int64_t total = 0;
  for (const DraftRows& r : rows) total += static_cast<int64_t>(r.next_tokens.size());
  if (!logits.empty() && static_cast<int64_t>(logits.size()) != total * head_rows())
    fail(ErrorKind::kInvalidArgument, "MTP drafter: logits span holds {} floats, {} rows × {} need {}", logits.size(),
         total, head_rows(), total * head_rows());
  if (total == 0) return;
  Tensor hidden = scratch_.get("hidden", {total, H});
  int64_t row = 0;
  for (const DraftRows& r : rows) {
    const int64_t n = static_cast<int64_t>(r.next_tokens.size());
    SeqState& s = state(r.seq);
    if (static_cast<int64_t>(r.features.size()) != n * features_.width(H))
      fail(ErrorKind::kInvalidArgument, "MTP drafter: sequence {} brings {} next tokens and {} feature floats (need {})",
           r.seq, n, r.features.size(), n * features_.width(H));
    if (r.start > s.held)
      fail(ErrorKind::kInvalidArgument, "MTP drafter: sequence {} observes from position {} but holds only {}", r.seq,
           r.start, s.held);
    if (n == 0) continue;
    if (r.start < s.held) {  // a rollback: nothing at positions >= start stays
      kv_->truncate(r.seq, r.start);
      s.held = r.start;
    }
    add_step_sequence(step, r.seq, r.start, r.next_tokens);
    backend_.copy(hidden.slice0(row, row + n),
                  Tensor::make(const_cast<float*>(r.features.data()), DType::kF32, {n, H}, Device::kCpu));
    used.push_back(&r);
    row += n;
  }
  finish_step(step);
  const bool all_rows = !logits.empty();  // else only each sequence's newest row goes past its K/V
  Tensor x = forward(step, hidden, all_rows);
  Tensor last = Tensor::make(last_.data(), DType::kF32, {limits_.max_sequences, H}, backend_.device());
  for (size_t i = 0; i < used.size(); ++i) {
    SeqState& s = state(used[i]->seq);
    const int64_t end = all_rows ? step.q_start[i + 1] : static_cast<int64_t>(i) + 1;
    backend_.copy(last.slice0(s.slot, s.slot + 1), x.slice0(end - 1, end));
    s.held = used[i]->start + static_cast<int64_t>(used[i]->next_tokens.size());
  }
  if (!logits.empty()) {
    std::vector<int32_t> ids(static_cast<size_t>(total));
    score(x, scratch_.get("normed", {total, H}), ids, logits);
  }
  backend_.synchronize();
}

void MtpDrafter::propose(std::span<const SeqId> seqs, int32_t k, std::span<int32_t> drafts) {
  propose(seqs, k, drafts, {});
}

void MtpDrafter::propose(std::span<const SeqId> seqs, int32_t k, std::span<int32_t> drafts, std::span<float> logits) {
  const int64_t S = static_cast<int64_t>(seqs.size()), H = config_.hidden_size, V = head_rows();
  if (k < 1 || k > max_draft_tokens())
    fail(ErrorKind::kInvalidArgument, "MTP drafter: {} draft tokens asked, it drafts 1 to {}", k, max_draft_tokens());
  if (static_cast<int64_t>(drafts.size()) != S * k)
    fail(ErrorKind::kInvalidArgument, "MTP drafter: drafts span holds {} ids, {} sequences × {} need {}", drafts.size(),
         S, k, S * k);
  if (!logits.empty() && static_cast<int64_t>(logits.size()) != S * k * V)
    fail(ErrorKind::kInvalidArgument, "MTP drafter: logits span holds {} floats, {} drafts × {} need {}", logits.size(),
         S * k, V, S * k * V);
  if (S == 0) return;
  std::vector<int32_t> slots(static_cast<size_t>(S));
  for (int64_t s = 0; s < S; ++s) {
    const SeqState& st = state(seqs[static_cast<size_t>(s)]);
    if (st.held == 0) fail(ErrorKind::kInvalidArgument, "MTP drafter: sequence {} has observed nothing", seqs[s]);
    slots[static_cast<size_t>(s)] = st.slot;
  }
  Tensor cur = scratch_.get("draft_x", {S, H});        // draft j's MTP layer output (before mtp.norm)
  Tensor normed = scratch_.get("draft_normed", {S, H});
  backend_.gather_rows(cur, Tensor::make(last_.data(), DType::kF32, {limits_.max_sequences, H}, backend_.device()),
                       slots);
  std::vector<int32_t> ids(static_cast<size_t>(S)), tokens(1);
  for (int32_t j = 0; j < k; ++j) {
    if (j > 0) {
      Step step;
      for (int64_t s = 0; s < S; ++s) {
        tokens[0] = ids[static_cast<size_t>(s)];
        // Draft j's input: (its predecessor's output, draft j−1) at the position after the predecessor's.
        add_step_sequence(step, seqs[static_cast<size_t>(s)], state(seqs[static_cast<size_t>(s)]).held + j - 1, tokens);
      }
      finish_step(step);
      Tensor x = forward(step, options_.recursion == MtpRecursion::kAfterNorm ? normed : cur, true);
      backend_.copy(cur, x);
    }
    if (!logits.empty()) host_logits_.resize(static_cast<size_t>(S * V));  // the scores asked for (tests)
    score(cur, normed, ids, logits.empty() ? std::span<float>() : std::span<float>(host_logits_));
    for (int64_t s = 0; s < S; ++s) {
      drafts[static_cast<size_t>(s * k + j)] = ids[static_cast<size_t>(s)];
      if (!logits.empty())
        std::copy_n(host_logits_.begin() + s * V, V, logits.begin() + (s * k + j) * V);
    }
  }
}

}  // namespace ninfer
