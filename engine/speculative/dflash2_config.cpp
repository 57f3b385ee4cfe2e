#include "engine/speculative/dflash2_config.h"

#include <cmath>

#include <fmt/format.h>

#include "engine/core/error.h"
#include "engine/model/model_weights.h"

namespace ninfer {
namespace {

constexpr const char* kConfigTensor = "dflash2.config";

int64_t as_int(const Artifact& a, const float* v, int64_t i, const char* field, int64_t lo, int64_t hi) {
  const float x = v[i];
  if (!std::isfinite(x) || x != std::floor(x) || x < static_cast<float>(lo) || x > static_cast<float>(hi))
    fail(ErrorKind::kCorrupt, "{}: {}[{}] ({}) = {} is not an integer in [{}, {}]", a.path(), kConfigTensor, i,
         field, x, lo, hi);
  return static_cast<int64_t>(x);
}

}  // namespace

bool has_dflash2(const Artifact& artifact) {
  for (const TensorInfo& t : artifact.tensors())
    if (t.section == "dflash2") return true;
  return false;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> dflash2_weight_schema(const Dflash2Config& c) {
  const int64_t H = c.hidden_size, q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  std::vector<std::pair<std::string, std::vector<int64_t>>> s = {
      {"dflash2.fc.weight", {H, c.feature_size()}},
      {"dflash2.hidden_norm.weight", {H}},
      {"dflash2.mask_embedding", {H}},
      {"dflash2.norm.weight", {H}},
  };
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = fmt::format("dflash2.layers.{}.", l);
    s.push_back({p + "input_layernorm.weight", {H}});
    s.push_back({p + "post_attention_layernorm.weight", {H}});
    s.push_back({p + "self_attn.q_proj.weight", {q, H}});
    s.push_back({p + "self_attn.k_proj.weight", {kv, H}});
    s.push_back({p + "self_attn.v_proj.weight", {kv, H}});
    s.push_back({p + "self_attn.o_proj.weight", {H, q}});
    s.push_back({p + "self_attn.q_norm.weight", {c.head_dim}});
    s.push_back({p + "self_attn.k_norm.weight", {c.head_dim}});
    s.push_back({p + "mlp.gate_proj.weight", {c.intermediate_size, H}});
    s.push_back({p + "mlp.up_proj.weight", {c.intermediate_size, H}});
    s.push_back({p + "mlp.down_proj.weight", {H, c.intermediate_size}});
  }
  return s;
}

Dflash2Config load_dflash2_config(const Artifact& a, const ModelConfig& target) {
  namespace f = dflash2_config_field;
  const TensorInfo* ct = a.find(kConfigTensor);
  if (ct == nullptr)
    fail(ErrorKind::kNotFound, "{}: no '{}' tensor: the artifact has no DFlash2 drafter (--spec dflash2 needs one)",
         a.path(), kConfigTensor);
  if (ct->section != "dflash2" || ct->dtype != DType::kF32 || ct->shape.size() != 1 ||
      ct->shape[0] <= f::kTargetLayerIds)
    fail(ErrorKind::kCorrupt, "{}: '{}' must be an f32 vector of at least {} entries in section dflash2, got {} {} "
         "[{}] in section {}", a.path(), kConfigTensor, f::kTargetLayerIds + 1, dtype_name(ct->dtype),
         ct->shape.size(), fmt::join(ct->shape, ","), ct->section);
  const float* v = reinterpret_cast<const float*>(a.data(*ct).data());
  const int64_t n = ct->shape[0];
  const int64_t version = as_int(a, v, f::kFormatVersion, "format_version", 0, 1 << 20);
  if (version != kDflash2ConfigVersion)
    fail(ErrorKind::kUnsupported, "{}: {} format_version {} (this build reads version {})", a.path(), kConfigTensor,
         version, kDflash2ConfigVersion);
  Dflash2Config c;
  c.hidden_size = as_int(a, v, f::kHiddenSize, "hidden_size", 1, 1 << 20);
  c.num_layers = as_int(a, v, f::kNumLayers, "num_layers", 1, 64);
  c.num_heads = as_int(a, v, f::kNumHeads, "num_heads", 1, 1024);
  c.num_kv_heads = as_int(a, v, f::kNumKvHeads, "num_kv_heads", 1, 1024);
  c.head_dim = as_int(a, v, f::kHeadDim, "head_dim", 2, 1024);
  c.intermediate_size = as_int(a, v, f::kIntermediateSize, "intermediate_size", 1, 1 << 22);
  c.block_size = as_int(a, v, f::kBlockSize, "block_size", 2, 64);
  c.mask_token_id = as_int(a, v, f::kMaskTokenId, "mask_token_id", 0, target.vocab_size - 1);
  c.rope_theta = v[f::kRopeTheta];
  c.rms_norm_eps = v[f::kRmsNormEps];
  if (!(c.rope_theta > 1.0) || !std::isfinite(c.rope_theta))
    fail(ErrorKind::kCorrupt, "{}: {} rope_theta = {} must be a finite number > 1", a.path(), kConfigTensor,
         c.rope_theta);
  if (!(c.rms_norm_eps > 0.0f) || !(c.rms_norm_eps < 1.0f))
    fail(ErrorKind::kCorrupt, "{}: {} rms_norm_eps = {} must be in (0, 1)", a.path(), kConfigTensor, c.rms_norm_eps);
  const int64_t nt = as_int(a, v, f::kNumTargetLayers, "num_target_layers", 1, target.num_layers);
  if (n != f::kTargetLayerIds + nt)
    fail(ErrorKind::kCorrupt, "{}: {} has {} entries; {} target layer ids need exactly {}", a.path(), kConfigTensor,
         n, nt, f::kTargetLayerIds + nt);
  for (int64_t i = 0; i < nt; ++i) {
    const int64_t id = as_int(a, v, f::kTargetLayerIds + i, "target_layer_ids", 0, target.num_layers - 1);
    if (!c.target_layer_ids.empty() && id <= c.target_layer_ids.back())
      fail(ErrorKind::kCorrupt, "{}: {} target_layer_ids must increase, got {} after {}", a.path(), kConfigTensor, id,
           c.target_layer_ids.back());
    c.target_layer_ids.push_back(id);
  }
  if (c.hidden_size != target.hidden_size)
    fail(ErrorKind::kInvalidArgument, "{}: DFlash2 hidden_size {} differs from the target's {} (the drafter shares "
         "the target's embedding and lm_head)", a.path(), c.hidden_size, target.hidden_size);
  if (c.num_heads % c.num_kv_heads != 0 || c.head_dim % 2 != 0)
    fail(ErrorKind::kCorrupt, "{}: DFlash2 heads {} / kv heads {} / head_dim {}: heads must be a multiple of kv "
         "heads and head_dim even", a.path(), c.num_heads, c.num_kv_heads, c.head_dim);

  const auto schema = dflash2_weight_schema(c);
  size_t section_count = 0;
  for (const TensorInfo& t : a.tensors())
    if (t.section == "dflash2") ++section_count;
  for (const auto& [name, shape] : schema) {
    const TensorInfo& t = a.require(name);
    if (t.section != "dflash2")
      fail(ErrorKind::kCorrupt, "{}: tensor '{}' is in section {}, expected dflash2", a.path(), name, t.section);
    if (t.shape != shape)
      fail(ErrorKind::kCorrupt, "{}: tensor '{}' has shape [{}]; dflash2.config implies [{}]", a.path(), name,
           fmt::join(t.shape, ","), fmt::join(shape, ","));
    if (t.dtype != DType::kF32 && t.dtype != DType::kBF16 && t.dtype != DType::kF16)
      fail(ErrorKind::kUnsupported, "{}: tensor '{}' has dtype {}; DFlash2 weights may be f32, bf16 or f16", a.path(),
           name, dtype_name(t.dtype));
  }
  if (section_count != schema.size() + 1)  // + the config tensor
    fail(ErrorKind::kCorrupt, "{}: section dflash2 holds {} tensors; its config implies {} (+ {})", a.path(),
         section_count, schema.size(), kConfigTensor);
  return c;
}

Dflash2Weights bind_dflash2_weights(const Artifact& a, const Dflash2Config& c) {
  auto get = [&](const std::string& name) { return tensor_view(a, a.require(name)); };
  Dflash2Weights w;
  w.fc = get("dflash2.fc.weight");
  w.hidden_norm = get("dflash2.hidden_norm.weight");
  const Tensor mask = get("dflash2.mask_embedding");
  w.mask_embedding = Tensor::make(mask.data, mask.dtype, {1, c.hidden_size}, mask.device);
  w.final_norm = get("dflash2.norm.weight");
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = fmt::format("dflash2.layers.{}.", l);
    Dflash2LayerWeights lw;
    lw.input_norm = get(p + "input_layernorm.weight");
    lw.post_norm = get(p + "post_attention_layernorm.weight");
    lw.q_proj = get(p + "self_attn.q_proj.weight");
    lw.k_proj = get(p + "self_attn.k_proj.weight");
    lw.v_proj = get(p + "self_attn.v_proj.weight");
    lw.o_proj = get(p + "self_attn.o_proj.weight");
    lw.q_norm = get(p + "self_attn.q_norm.weight");
    lw.k_norm = get(p + "self_attn.k_norm.weight");
    lw.gate_proj = get(p + "mlp.gate_proj.weight");
    lw.up_proj = get(p + "mlp.up_proj.weight");
    lw.down_proj = get(p + "mlp.down_proj.weight");
    w.layers.push_back(lw);
  }
  return w;
}

ModelConfig dflash2_as_model_config(const Dflash2Config& d, const ModelConfig& target) {
  ModelConfig c;
  c.arch = Architecture::kQwen3;
  c.vocab_size = target.vocab_size;
  c.hidden_size = d.hidden_size;
  c.intermediate_size = d.intermediate_size;
  c.num_layers = d.num_layers;
  c.layer_types.assign(static_cast<size_t>(d.num_layers), LayerType::kFullAttention);
  c.num_heads = d.num_heads;
  c.num_kv_heads = d.num_kv_heads;
  c.head_dim = d.head_dim;
  return c;
}

Dflash2Config dflash2_rank_config(const Dflash2Config& d, const TpLayout& l) {
  Dflash2Config r = d;
  r.num_heads = l.q_heads;
  r.num_kv_heads = l.kv_heads;
  r.intermediate_size = l.inter;
  return r;
}

Dflash2Weights shard_dflash2_weights(const Dflash2Weights& full, const Dflash2Config& c, const TpLayout& l) {
  Dflash2Weights w = full;
  WeightShard shard(w.owned);
  const int64_t hd = c.head_dim;
  const WeightShard::Range q{l.q_head0 * hd, (l.q_head0 + l.q_heads) * hd}, kv{l.kv_head0 * hd, (l.kv_head0 + l.kv_heads) * hd},
      mlp{l.inter0, l.inter0 + l.inter};
  for (size_t i = 0; i < full.layers.size(); ++i) {
    const Dflash2LayerWeights& f = full.layers[i];
    Dflash2LayerWeights& r = w.layers[i];
    const std::string p = fmt::format("dflash2.layers.{}.", i);
    r.q_proj = shard.rows(f.q_proj, q, p + "self_attn.q_proj.weight");
    r.k_proj = shard.rows(f.k_proj, kv, p + "self_attn.k_proj.weight");
    r.v_proj = shard.rows(f.v_proj, kv, p + "self_attn.v_proj.weight");
    r.o_proj = shard.columns(f.o_proj, q, p + "self_attn.o_proj.weight");
    r.gate_proj = shard.rows(f.gate_proj, mlp, p + "mlp.gate_proj.weight");
    r.up_proj = shard.rows(f.up_proj, mlp, p + "mlp.up_proj.weight");
    r.down_proj = shard.columns(f.down_proj, mlp, p + "mlp.down_proj.weight");
  }
  return w;
}

}  // namespace ninfer
