#include "engine/plan/plan_tensors.h"

#include "engine/core/error.h"
#include "engine/model/weight_schema.h"
#include "engine/pack/quant_plan.h"

namespace ninfer {

std::vector<PlanTensor> plan_tensors_from_artifact(const Artifact &artifact) {
  std::vector<PlanTensor> out;
  for (const TensorInfo &t : artifact.tensors())
    out.push_back({t.name, t.section, t.dtype, t.shape});
  return out;
}

std::vector<PlanTensor> plan_tensors_from_config(const ModelConfig &config,
                                                 PlanQuant quant) {
  const std::vector<std::string> keep = default_nvfp4_keep();
  std::vector<PlanTensor> out;
  std::vector<ExpectedWeight> weights =
      expected_weights(config, config.mtp_num_layers > 0);
  if (quant == PlanQuant::kNvfp4Head && config.tie_word_embeddings)
    weights.push_back(lm_head_weight(config));
  for (const ExpectedWeight &w : weights) {
    DType dtype = DType::kBF16;
    if (quant != PlanQuant::kBf16 && w.kind == WeightKind::kProjection &&
        nvfp4_choice(w.name, w.shape, keep) == Nvfp4Choice::kQuantize)
      dtype = DType::kNVFP4;
    if (quant == PlanQuant::kNvfp4Head && w.kind == WeightKind::kLmHead)
      dtype = DType::kNVFP4;
    out.push_back({w.name, w.section, dtype, w.shape});
  }
  return out;
}

Dflash2Config dflash2_config_from_hf_json(const nlohmann::json &j,
                                          const ModelConfig &target,
                                          const std::string &source) {
  auto positive = [&](const char *key) -> int64_t {
    if (!j.contains(key) || !j[key].is_number_integer() ||
        j[key].get<int64_t>() <= 0)
      fail(ErrorKind::kInvalidArgument,
           "{}: DFlash config field '{}' must be a positive integer", source,
           key);
    return j[key].get<int64_t>();
  };
  if (!j.is_object())
    fail(ErrorKind::kInvalidArgument, "{}: DFlash config is not a JSON object",
         source);
  Dflash2Config c;
  c.hidden_size = positive("hidden_size");
  c.num_layers = positive("num_hidden_layers");
  c.num_heads = positive("num_attention_heads");
  c.num_kv_heads = j.contains("num_key_value_heads")
                       ? positive("num_key_value_heads")
                       : c.num_heads;
  c.head_dim = j.contains("head_dim") ? positive("head_dim")
                                      : c.hidden_size / c.num_heads;
  c.intermediate_size = positive("intermediate_size");
  c.block_size = positive("block_size");
  c.rope_theta = j.value("rope_theta", 1e6);
  c.rms_norm_eps = j.value("rms_norm_eps", 1e-6f);
  const nlohmann::json &d = j.contains("dflash_config")
                                ? j["dflash_config"]
                                : nlohmann::json::object();
  c.mask_token_id = d.value("mask_token_id", int64_t{0});
  if (!d.contains("target_layer_ids") || !d["target_layer_ids"].is_array() ||
      d["target_layer_ids"].empty())
    fail(ErrorKind::kInvalidArgument,
         "{}: DFlash config needs dflash_config.target_layer_ids (a non-empty "
         "array)",
         source);
  for (const auto &id : d["target_layer_ids"]) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() >= target.num_layers)
      fail(ErrorKind::kInvalidArgument,
           "{}: dflash_config.target_layer_ids entry {} is not a layer of the "
           "{}-layer target",
           source, id.dump(), target.num_layers);
    c.target_layer_ids.push_back(id.get<int64_t>());
  }
  if (c.hidden_size != target.hidden_size)
    fail(ErrorKind::kInvalidArgument,
         "{}: DFlash hidden_size {} differs from the target's {}", source,
         c.hidden_size, target.hidden_size);
  if (c.num_heads % c.num_kv_heads != 0)
    fail(ErrorKind::kInvalidArgument,
         "{}: DFlash num_attention_heads {} is not a multiple of "
         "num_key_value_heads {}",
         source, c.num_heads, c.num_kv_heads);
  return c;
}

std::vector<PlanTensor> plan_tensors_from_dflash2(const Dflash2Config &config) {
  std::vector<PlanTensor> out;
  for (const auto &[name, shape] : dflash2_weight_schema(config))
    out.push_back({name, "dflash2",
                   shape.size() == 2 ? DType::kBF16 : DType::kF32, shape});
  return out;
}

} // namespace ninfer
