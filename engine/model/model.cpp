#include "engine/model/model.h"
#include <spdlog/spdlog.h>

#include <cmath>

#include "engine/backend/checks/logit_edit_checks.h"
#include "engine/core/error.h"
#include "engine/model/swiglu_mlp.h"
#include "engine/model/vocab_parallel_head.h"

namespace ninfer {

Model::Model(const ModelConfig& config, ModelWeights weights, Backend& backend, Communicator& comm)
    : config_(config),
      w_(std::move(weights)),
      backend_(backend),
      comm_(comm),
      norm_offset_(config.arch == Architecture::kQwen3_5 ? 1.0f : 0.0f),
      scratch_(backend) {}

void Model::set_output_mask(std::span<const uint8_t> allowed) {
  output_mask_buffer_ = {};
  output_mask_ = {};
  if (allowed.empty()) return;
  if (static_cast<int64_t>(allowed.size()) != config_.vocab_size)
    fail(ErrorKind::kInvalidArgument, "output mask: {} flags for a vocabulary of {}", allowed.size(), config_.vocab_size);
  std::vector<int8_t> flags(allowed.size());
  for (size_t i = 0; i < allowed.size(); ++i) flags[i] = allowed[i] != 0 ? 1 : 0;
  output_mask_buffer_ = backend_.alloc(flags.size());
  output_mask_ = Tensor::make(output_mask_buffer_.data(), DType::kI8, {config_.vocab_size}, backend_.device());
  backend_.copy(output_mask_, Tensor::make(flags.data(), DType::kI8, {config_.vocab_size}, Device::kCpu));
  backend_.synchronize();  // `flags` goes out of scope
}

void Model::forward(const ForwardBatch& batch, KvCache& kv, LinearStateCache& state, const LogitsOut& out,
                    const FeatureCapture& capture) {
  const ModelConfig& c = config_;
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t R = static_cast<int64_t>(batch.logit_rows.size());
  if (T == 0) fail(ErrorKind::kInvalidArgument, "forward over an empty batch");
  const int asked = (out.rows.empty() ? 0 : 1) + (out.argmax.empty() ? 0 : 1) + (out.top.empty() ? 0 : 1);
  if (asked != 1 && R > 0)
    fail(ErrorKind::kInvalidArgument, "forward: asks for {} of the logit rows, their argmax and their top pairs",
         asked == 0 ? "none" : "more than one");
  if (!out.rows.empty() && static_cast<int64_t>(out.rows.size()) != R * c.vocab_size)
    fail(ErrorKind::kInvalidArgument, "forward: logits span holds {} floats, {} rows × vocab {} need {}",
         out.rows.size(), R, c.vocab_size, R * c.vocab_size);
  if (!out.argmax.empty() && static_cast<int64_t>(out.argmax.size()) != R)
    fail(ErrorKind::kInvalidArgument, "forward: argmax span holds {} ids for {} logit rows", out.argmax.size(), R);
  if (!out.top.empty() && (out.top_k < 1 || out.top_k > kTopKRowsMax ||
                           static_cast<int64_t>(out.top.size()) != R * out.top_k * 2))
    fail(ErrorKind::kInvalidArgument, "forward: top span holds {} floats for {} rows of top_k {} pairs (1 to {})",
         out.top.size(), R, out.top_k, kTopKRowsMax);
  if (!out.edits.empty() && out.argmax.empty() && out.top.empty())
    fail(ErrorKind::kInvalidArgument, "forward: {} logit edits with whole rows (the host sampler edits those)",
         out.edits.size());
  check_logit_edits("forward", out.edits, R, c.vocab_size);

  const int64_t H = c.hidden_size;
  const bool capturing = capture.active();
  const int64_t W = capturing ? capture.spec->width(H) : 0;
  if (capturing) {
    if (static_cast<int64_t>(capture.out.size()) != T * W)
      fail(ErrorKind::kInvalidArgument, "forward: feature capture holds {} floats, {} rows × width {} need {}",
           capture.out.size(), T, W, T * W);
    for (int64_t l : capture.spec->layers)
      if (l < 0 || l >= c.num_layers)
        fail(ErrorKind::kInvalidArgument, "forward: feature layer {} outside the model's {} layers", l, c.num_layers);
  }
  const FeatureSpec* features = capturing ? capture.spec : nullptr;

  backend_.embedding(scratch_.get("x", {T, H}), w_.embed, batch.tokens);
  // Under TP a greedy or top-k step gathers each rank's best (score, id) pairs instead of its scores
  // (vocab_parallel_argmax / vocab_parallel_top): the body then stops at the final-normed rows. Step graphs are off
  // under TP, so a recorded body always has the head.
  const bool sharded_choice =
      (!out.argmax.empty() || !out.top.empty()) && vocab_parallel_choice_sharded(comm_, c.vocab_size);
  const auto run_body = [&](const ForwardBatch& b) { body(b, kv, state, features, /*head=*/!sharded_choice); };
  if (OpGraph* graph = graphs_ ? graphs_->prepare(batch, features, scratch_.epoch(), run_body) : nullptr)
    graph->replay();
  else
    run_body(batch);
  if (sharded_choice) {
    const Tensor sel = scratch_.get("sel", {R, H});
    if (!out.argmax.empty())
      vocab_parallel_argmax(backend_, comm_, scratch_, sel, w_.lm_head, c.vocab_size, output_mask_, out.argmax, {},
                            out.edits);
    else
      vocab_parallel_top(backend_, comm_, scratch_, sel, w_.lm_head, c.vocab_size, output_mask_, out.top_k, out.top,
                         out.edits);
  } else {
    const Tensor logits = scratch_.get("logits", {R, c.vocab_size});
    mask_and_edit(backend_, logits, output_mask_, out.edits);
    if (!out.argmax.empty()) backend_.argmax_rows(out.argmax, logits);
    else if (!out.top.empty()) top_of_rows(backend_, scratch_, logits, out.top_k, out.top);
    else backend_.copy(Tensor::make(out.rows.data(), DType::kF32, {R, c.vocab_size}, Device::kCpu), logits);
  }
  if (capturing)
    backend_.copy(Tensor::make(capture.out.data(), DType::kF32, {T, W}, Device::kCpu), scratch_.get("features", {T, W}));
  backend_.synchronize();
}

void Model::enable_step_graphs(bool on) {
  graphs_.reset();
  if (!on) return;
  if (!backend_.graphs_supported()) {
    spdlog::info("step graphs: off, the {} backend does not record op graphs", backend_.name());
    return;
  }
  if (comm_.size() > 1) {
    // Every rank would have to make the same recording decisions at the same step (a rank recording while another
    // replays would wait in a collective's host-side exchange): not built yet (docs/cuda-graphs.md).
    spdlog::info("step graphs: off under tensor parallelism (not built yet)");
    return;
  }
  graphs_ = std::make_unique<StepGraphs>(backend_);
}

void Model::body(const ForwardBatch& batch, KvCache& kv, LinearStateCache& state, const FeatureSpec* features,
                 bool head) {
  const ModelConfig& c = config_;
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t R = static_cast<int64_t>(batch.logit_rows.size());
  const int64_t H = c.hidden_size;
  const int64_t W = features != nullptr ? features->width(H) : 0;
  Tensor feats = features != nullptr ? scratch_.get("features", {T, W}) : Tensor{};
  // Column block j of the features (layer features in spec order, then the final hidden state).
  auto feature_block = [&](size_t j) {
    return Tensor::strided(static_cast<float*>(feats.data) + static_cast<int64_t>(j) * H, DType::kF32, {T, H}, {W, 1},
                           feats.device);
  };

  Tensor x = scratch_.get("x", {T, H});
  Tensor h = scratch_.get("h", {T, H});
  Tensor mix = scratch_.get("mix", {T, H});
  // Each residual add runs fused with the norm that reads its sum (add_rms_norm): the block's output into x and the
  // post-attention norm, the MLP's into x and the next layer's input norm (or the final norm, where every row goes
  // through it).
  const bool final_norm_all_rows = features != nullptr && features->final_hidden;
  const size_t layers = w_.layers.size();
  int64_t attn_layer = 0, gdn_layer = 0;
  if (layers > 0) backend_.rms_norm(h, x, w_.layers.front().input_norm, c.rms_norm_eps, norm_offset_);
  for (size_t layer = 0; layer < layers; ++layer) {
    const LayerWeights& lw = w_.layers[layer];
    if (lw.type == LayerType::kFullAttention) attention_block(lw, attn_layer++, h, mix, batch, kv);
    else delta_net_block(lw, gdn_layer++, h, mix, batch, state);
    backend_.add_rms_norm(x, h, mix, lw.post_norm, c.rms_norm_eps, norm_offset_);
    swiglu_mlp(backend_, scratch_, lw.gate_proj, lw.up_proj, lw.down_proj, h, mix);
    comm_.all_reduce_sum(mix, backend_);  // down_proj is row-parallel: the ranks' partial sums
    if (layer + 1 < layers)
      backend_.add_rms_norm(x, h, mix, w_.layers[layer + 1].input_norm, c.rms_norm_eps, norm_offset_);
    else if (final_norm_all_rows) backend_.add_rms_norm(x, h, mix, w_.final_norm, c.rms_norm_eps, norm_offset_);
    else backend_.add(x, x, mix);
    if (features != nullptr)
      for (size_t j = 0; j < features->layers.size(); ++j)
        if (features->layers[j] == static_cast<int64_t>(layer)) backend_.copy(feature_block(j), x);
  }

  Tensor sel = scratch_.get("sel", {R, H});
  if (final_norm_all_rows) {  // every row through the final norm (h, above), the logit rows gathered after
    if (layers == 0) backend_.rms_norm(h, x, w_.final_norm, c.rms_norm_eps, norm_offset_);
    backend_.copy(feature_block(features->layers.size()), h);
    backend_.gather_rows(sel, h, batch.logit_rows);
  } else {
    backend_.gather_rows(sel, x, batch.logit_rows);
    backend_.rms_norm(sel, sel, w_.final_norm, c.rms_norm_eps, norm_offset_);
  }
  if (head) vocab_parallel_head(backend_, comm_, scratch_, sel, w_.lm_head, scratch_.get("logits", {R, c.vocab_size}));
}

void Model::attention_block(const LayerWeights& lw, int64_t attn_layer, const Tensor& h, const Tensor& out,
                            const ForwardBatch& batch, KvCache& kv) {
  const ModelConfig& c = config_;
  const int64_t T = h.dim(0), nh = c.num_heads, nkv = c.num_kv_heads, hd = c.head_dim;
  const int64_t per_head = c.attn_output_gate ? 2 * hd : hd;
  const AttentionWeights& w = lw.attn;

  Tensor qg = scratch_.get("attn_qg", {T, nh * per_head});
  backend_.linear(qg, h, w.q_proj);
  // Per head the projection emits [q | gate]: strided views pick each half.
  Tensor q_raw = Tensor::strided(qg.data, DType::kF32, {T, nh, hd}, {nh * per_head, per_head, 1}, qg.device);
  Tensor q = scratch_.get("attn_q", {T, nh, hd});
  Tensor k = scratch_.get("attn_k", {T, nkv, hd});
  Tensor v = scratch_.get("attn_v", {T, nkv, hd});
  backend_.rms_norm(q, q_raw, w.q_norm, c.rms_norm_eps, norm_offset_);
  backend_.linear(k.reshape({T, nkv * hd}), h, w.k_proj);
  backend_.rms_norm(k, k, w.k_norm, c.rms_norm_eps, norm_offset_);
  backend_.linear(v.reshape({T, nkv * hd}), h, w.v_proj);
  backend_.rope(q, batch.positions, c.rotary_dim, c.rope_theta);
  backend_.rope(k, batch.positions, c.rotary_dim, c.rope_theta);

  backend_.kv_write(kv.layer(attn_layer), k, v, batch.kv_slots);
  Tensor o = scratch_.get("attn_o", {T, nh, hd});
  PagedKv paged{batch.q_start, batch.seq_len, batch.block_table, batch.max_blocks};
  backend_.attention(o, q, kv.layer(attn_layer), paged, 1.0f / std::sqrt(static_cast<float>(hd)));
  if (c.attn_output_gate) {
    Tensor gate = Tensor::strided(static_cast<float*>(qg.data) + hd, DType::kF32, {T, nh, hd},
                                  {nh * per_head, per_head, 1}, qg.device);
    backend_.sigmoid_mul(o, o, gate);
  }
  backend_.linear(out, o.reshape({T, nh * hd}), w.o_proj);
  comm_.all_reduce_sum(out, backend_);  // o_proj is row-parallel over the rank's heads
}

void Model::delta_net_block(const LayerWeights& lw, int64_t gdn_layer, const Tensor& h, const Tensor& out,
                            const ForwardBatch& batch, LinearStateCache& state) {
  const ModelConfig& c = config_;
  const int64_t T = h.dim(0), C = c.linear_conv_dim();
  const int64_t nk = c.linear_num_key_heads, nv = c.linear_num_value_heads;
  const int64_t dk = c.linear_key_head_dim, dv = c.linear_value_head_dim;
  const DeltaNetWeights& w = lw.gdn;
  SeqBatch seqs{batch.q_start, batch.state_slot, batch.checkpoint_slot};

  Tensor qkv = scratch_.get("gdn_qkv", {T, C});
  Tensor z = scratch_.get("gdn_z", {T, nv, dv});
  Tensor a = scratch_.get("gdn_a", {T, nv});
  Tensor b = scratch_.get("gdn_b", {T, nv});
  backend_.linear(qkv, h, w.in_proj_qkv);
  backend_.linear(z.reshape({T, nv * dv}), h, w.in_proj_z);
  backend_.linear(b, h, w.in_proj_b);
  backend_.linear(a, h, w.in_proj_a);

  Tensor conv = scratch_.get("gdn_conv", {T, C});
  backend_.conv1d(conv, qkv, w.conv1d, state.conv(gdn_layer), seqs, /*silu=*/true);
  // Channels of the conv output are [q | k | v].
  auto* base = static_cast<float*>(conv.data);
  Tensor q_raw = Tensor::strided(base, DType::kF32, {T, nk, dk}, {C, dk, 1}, conv.device);
  Tensor k_raw = Tensor::strided(base + nk * dk, DType::kF32, {T, nk, dk}, {C, dk, 1}, conv.device);
  Tensor v = Tensor::strided(base + 2 * nk * dk, DType::kF32, {T, nv, dv}, {C, dv, 1}, conv.device);
  Tensor q = scratch_.get("gdn_q", {T, nk, dk});
  Tensor k = scratch_.get("gdn_k", {T, nk, dk});
  constexpr float kL2Eps = 1e-6f;  // transformers' l2norm default, as in the FLA kernels
  backend_.l2_norm(q, q_raw, kL2Eps, 1.0f / std::sqrt(static_cast<float>(dk)));
  backend_.l2_norm(k, k_raw, kL2Eps, 1.0f);

  Tensor g = scratch_.get("gdn_g", {T, nv});
  Tensor beta = scratch_.get("gdn_beta", {T, nv});
  backend_.gdn_gating(g, beta, a, b, w.A_log, w.dt_bias);
  Tensor core = scratch_.get("gdn_core", {T, nv, dv});
  backend_.gated_delta_rule(core, q, k, v, g, beta, state.recurrent(gdn_layer), seqs);
  backend_.gated_rms_norm(core, core, z, w.norm, c.rms_norm_eps);
  backend_.linear(out, core.reshape({T, nv * dv}), w.out_proj);
  comm_.all_reduce_sum(out, backend_);  // out_proj is row-parallel over the rank's value heads
}

}  // namespace ninfer
