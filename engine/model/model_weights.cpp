#include "engine/model/model_weights.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "engine/core/error.h"

namespace ninfer {

Tensor tensor_view(const Artifact& artifact, const TensorInfo& info) {
  if (info.shape.empty() || info.shape.size() > static_cast<size_t>(Tensor::kMaxDims))
    fail(ErrorKind::kUnsupported, "{}: tensor '{}' has rank {}; the engine takes ranks 1 to {}", artifact.path(),
         info.name, info.shape.size(), Tensor::kMaxDims);
  // Weights are read-only by contract.
  return Tensor::make(const_cast<std::byte*>(artifact.data(info).data()), info.dtype, info.shape);
}

namespace {

// An nvfp4 projection binds as [N, K] with data at its codes (the backend finds the scales and the trailer through
// nvfp4_layout()); its trailer's scales must be usable.
void check_nvfp4_projection(const Artifact& a, const TensorInfo& info) {
  const auto layout = nvfp4_layout(info.shape);
  if (info.shape.size() != 2 || !layout || layout->total_bytes != info.bytes)
    fail(ErrorKind::kCorrupt, "{}: nvfp4 tensor '{}' must be a [N, K] entry of nvfp4_layout's size", a.path(), info.name);
  const std::byte* trailer = a.data(info).data() + layout->tensor_scale_offset;
  float weight_scale_2, input_scale;
  std::memcpy(&weight_scale_2, trailer, sizeof(float));
  std::memcpy(&input_scale, trailer + 4, sizeof(float));
  if (!std::isfinite(weight_scale_2) || weight_scale_2 < 0.0f || !std::isfinite(input_scale) || input_scale < 0.0f)
    fail(ErrorKind::kCorrupt, "{}: nvfp4 tensor '{}' has weight_scale_2 {} and input_scale {} (must be finite, >= 0)",
         a.path(), info.name, weight_scale_2, input_scale);
}

}  // namespace

ModelWeights ModelWeights::bind(const Artifact& a, const ModelConfig& c) {
  const auto get = [&](const std::string& name) {
    const TensorInfo& info = a.require(name);
    if (info.dtype == DType::kNVFP4) check_nvfp4_projection(a, info);
    return tensor_view(a, info);
  };
  return bind(get, a.find("lm_head.weight") != nullptr, c);
}

ModelWeights ModelWeights::bind(const std::function<Tensor(const std::string&)>& get, bool untied_lm_head,
                                const ModelConfig& c) {
  ModelWeights w;
  w.embed = get("model.embed_tokens.weight");
  w.final_norm = get("model.norm.weight");
  w.lm_head = untied_lm_head ? get("lm_head.weight") : w.embed;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    LayerWeights lw;
    lw.type = c.layer_types[static_cast<size_t>(l)];
    lw.input_norm = get(p + "input_layernorm.weight");
    lw.post_norm = get(p + "post_attention_layernorm.weight");
    lw.gate_proj = get(p + "mlp.gate_proj.weight");
    lw.up_proj = get(p + "mlp.up_proj.weight");
    lw.down_proj = get(p + "mlp.down_proj.weight");
    if (lw.type == LayerType::kFullAttention) {
      lw.attn = {get(p + "self_attn.q_proj.weight"), get(p + "self_attn.k_proj.weight"),
                 get(p + "self_attn.v_proj.weight"), get(p + "self_attn.o_proj.weight"),
                 get(p + "self_attn.q_norm.weight"), get(p + "self_attn.k_norm.weight")};
    } else {
      const std::string g = p + "linear_attn.";
      Tensor conv = get(g + "conv1d.weight");
      lw.gdn = {get(g + "in_proj_qkv.weight"),
                get(g + "in_proj_z.weight"),
                get(g + "in_proj_b.weight"),
                get(g + "in_proj_a.weight"),
                conv.reshape({c.linear_conv_dim(), c.linear_conv_kernel}),
                get(g + "dt_bias"),
                get(g + "A_log"),
                get(g + "norm.weight"),
                get(g + "out_proj.weight")};
    }
    w.layers.push_back(std::move(lw));
  }
  return w;
}

}  // namespace ninfer
