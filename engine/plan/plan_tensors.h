// Owns the list of tensors a memory plan counts (name, section, dtype, shape)
// and where it comes from: an artifact's tensor table, or a Hugging Face
// config.json with a quantization policy (the packer's), plus a DFlash2 drafter
// shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/artifact/artifact.h"
#include "engine/artifact/dtype.h"
#include "engine/model/model_config.h"
#include "engine/speculative/dflash2_config.h"

namespace ninfer {

struct PlanTensor {
  std::string name;
  std::string section; // artifact_format::kSections
  DType dtype = DType::kBF16;
  std::vector<int64_t> shape;
};

// Every tensor of the artifact's table, as stored (no tensor data is read).
std::vector<PlanTensor> plan_tensors_from_artifact(const Artifact &artifact);

// The quantization of a checkpoint that --plan-config describes.
enum class PlanQuant {
  kBf16,      // every tensor bf16 (the checkpoint as released)
  kNvfp4,     // `ninfer-pack --quant nvfp4` with its default keep-bf16 policy
              // (default_nvfp4_keep(), engine/pack/)
  kNvfp4Head, // the same with `--quant-lm-head nvfp4`: an nvfp4 lm_head.weight
              // (stored for a tied model too)
};

// The main and mtp sections `ninfer-pack [--quant nvfp4]` would write for
// `config` (expected_weights(): the text model, and the MTP layer when the
// config has one). Projections follow nvfp4_choice() under kNvfp4 and
// kNvfp4Head, the lm_head is nvfp4 under kNvfp4Head; embeddings, norms and the
// other parameters stay bf16. No vision tensors (never loaded).
std::vector<PlanTensor> plan_tensors_from_config(const ModelConfig &config,
                                                 PlanQuant quant);

// A DFlash drafter's Hugging Face config.json (z-lab's DFlashDraftModel:
// hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads,
// head_dim, intermediate_size, block_size, rope_theta, rms_norm_eps,
// dflash_config.{target_layer_ids, mask_token_id}) as the Dflash2Config the
// engine would load, checked against the target.
Dflash2Config dflash2_config_from_hf_json(const nlohmann::json &j,
                                          const ModelConfig &target,
                                          const std::string &source);

// The dflash2 section of that drafter as the exporter writes it
// (docs/dflash2.md): matrices bf16, vectors f32.
std::vector<PlanTensor> plan_tensors_from_dflash2(const Dflash2Config &config);

} // namespace ninfer
