#include "engine/model/weight_schema.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/core/error.h"

namespace ninfer {

namespace {

void add_attention(std::vector<ExpectedWeight> &out, const ModelConfig &c,
                   const std::string &prefix, const std::string &section) {
  const int64_t h = c.hidden_size, hd = c.head_dim;
  const int64_t q_out = c.num_heads * hd * (c.attn_output_gate ? 2 : 1);
  out.push_back({prefix + "self_attn.q_proj.weight",
                 section,
                 {q_out, h},
                 WeightKind::kProjection});
  out.push_back({prefix + "self_attn.k_proj.weight",
                 section,
                 {c.num_kv_heads * hd, h},
                 WeightKind::kProjection});
  out.push_back({prefix + "self_attn.v_proj.weight",
                 section,
                 {c.num_kv_heads * hd, h},
                 WeightKind::kProjection});
  out.push_back({prefix + "self_attn.o_proj.weight",
                 section,
                 {h, c.num_heads * hd},
                 WeightKind::kProjection});
  out.push_back({prefix + "self_attn.q_norm.weight",
                 section,
                 {hd},
                 WeightKind::kParameter});
  out.push_back({prefix + "self_attn.k_norm.weight",
                 section,
                 {hd},
                 WeightKind::kParameter});
}

void add_linear_attention(std::vector<ExpectedWeight> &out,
                          const ModelConfig &c, const std::string &prefix) {
  const int64_t h = c.hidden_size, nv = c.linear_num_value_heads;
  const std::string p = prefix + "linear_attn.";
  out.push_back({p + "in_proj_qkv.weight",
                 "main",
                 {c.linear_conv_dim(), h},
                 WeightKind::kProjection});
  out.push_back({p + "in_proj_z.weight",
                 "main",
                 {c.linear_value_dim(), h},
                 WeightKind::kProjection});
  out.push_back(
      {p + "in_proj_b.weight", "main", {nv, h}, WeightKind::kProjection});
  out.push_back(
      {p + "in_proj_a.weight", "main", {nv, h}, WeightKind::kProjection});
  out.push_back({p + "conv1d.weight",
                 "main",
                 {c.linear_conv_dim(), 1, c.linear_conv_kernel},
                 WeightKind::kParameter});
  out.push_back({p + "dt_bias", "main", {nv}, WeightKind::kParameter});
  out.push_back({p + "A_log", "main", {nv}, WeightKind::kParameter});
  out.push_back({p + "norm.weight",
                 "main",
                 {c.linear_value_head_dim},
                 WeightKind::kParameter});
  out.push_back({p + "out_proj.weight",
                 "main",
                 {h, c.linear_value_dim()},
                 WeightKind::kProjection});
}

void add_block_common(std::vector<ExpectedWeight> &out, const ModelConfig &c,
                      const std::string &prefix, const std::string &section) {
  const int64_t h = c.hidden_size, i = c.intermediate_size;
  out.push_back({prefix + "input_layernorm.weight",
                 section,
                 {h},
                 WeightKind::kParameter});
  out.push_back({prefix + "post_attention_layernorm.weight",
                 section,
                 {h},
                 WeightKind::kParameter});
  out.push_back({prefix + "mlp.gate_proj.weight",
                 section,
                 {i, h},
                 WeightKind::kProjection});
  out.push_back({prefix + "mlp.up_proj.weight",
                 section,
                 {i, h},
                 WeightKind::kProjection});
  out.push_back({prefix + "mlp.down_proj.weight",
                 section,
                 {h, i},
                 WeightKind::kProjection});
}

} // namespace

ExpectedWeight lm_head_weight(const ModelConfig &c) {
  return {"lm_head.weight",
          "main",
          {c.vocab_size, c.hidden_size},
          WeightKind::kLmHead};
}

bool dtype_allowed(WeightKind kind, DType dtype) {
  bool plain_float =
      dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
  if (kind == WeightKind::kProjection || kind == WeightKind::kLmHead)
    return plain_float || dtype == DType::kNVFP4;
  return plain_float;
}

std::vector<ExpectedWeight> expected_weights(const ModelConfig &c,
                                             bool include_mtp) {
  std::vector<ExpectedWeight> out;
  const int64_t h = c.hidden_size;
  out.push_back({"model.embed_tokens.weight",
                 "main",
                 {c.vocab_size, h},
                 WeightKind::kEmbedding});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    std::string prefix = fmt::format("model.layers.{}.", l);
    add_block_common(out, c, prefix, "main");
    if (c.layer_types[l] == LayerType::kFullAttention)
      add_attention(out, c, prefix, "main");
    else
      add_linear_attention(out, c, prefix);
  }
  out.push_back({"model.norm.weight", "main", {h}, WeightKind::kParameter});
  if (!c.tie_word_embeddings)
    out.push_back(lm_head_weight(c));
  if (include_mtp) {
    out.push_back({"mtp.pre_fc_norm_embedding.weight",
                   "mtp",
                   {h},
                   WeightKind::kParameter});
    out.push_back(
        {"mtp.pre_fc_norm_hidden.weight", "mtp", {h}, WeightKind::kParameter});
    out.push_back(
        {"mtp.fc.weight", "mtp", {h, 2 * h}, WeightKind::kProjection});
    for (int64_t l = 0; l < c.mtp_num_layers; ++l) {
      std::string prefix = fmt::format("mtp.layers.{}.", l);
      add_block_common(out, c, prefix, "mtp");
      add_attention(out, c, prefix, "mtp");
    }
    out.push_back({"mtp.norm.weight", "mtp", {h}, WeightKind::kParameter});
  }
  return out;
}

void check_weights(const ModelConfig &config, const WeightLookup &lookup,
                   const std::string &source) {
  bool has_mtp =
      config.mtp_num_layers > 0 && lookup("mtp.fc.weight").has_value();
  std::vector<ExpectedWeight> expected = expected_weights(config, has_mtp);
  if (config.tie_word_embeddings && lookup("lm_head.weight"))
    expected.push_back(lm_head_weight(config));
  for (const auto &w : expected) {
    auto found = lookup(w.name);
    if (!found)
      fail(ErrorKind::kNotFound, "{}: required tensor '{}' is missing", source,
           w.name);
    if (found->shape != w.shape)
      fail(ErrorKind::kCorrupt,
           "{}: tensor '{}' has shape [{}] but the config implies [{}]", source,
           w.name, fmt::join(found->shape, ", "), fmt::join(w.shape, ", "));
    if (!dtype_allowed(w.kind, found->dtype))
      fail(ErrorKind::kCorrupt,
           "{}: tensor '{}' has dtype {}, which this weight cannot have",
           source, w.name, dtype_name(found->dtype));
  }
}

} // namespace ninfer
