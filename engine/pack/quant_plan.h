// Owns ninfer-pack's own NVFP4 quantization: the keep-as-is policy, fused-group
// scales, the f32 conversion.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/pack/tensor_plan.h"

namespace ninfer {

enum class Nvfp4ScaleGroups : uint8_t {
  kFused, // q/k/v, gate/up and the GDN input projections of one layer share one
          // weight_scale_2 (ModelOpt's export)
  kTensor, // every tensor its own weight_scale_2 = amax / 2688
           // (compressed-tensors' compressor)
};

// Tensors --quant nvfp4 leaves as they are, as name globs ('*' any run of
// characters, '?' one): ModelOpt NVFP4_DEFAULT_CFG's exclusions that exist in a
// Qwen3.5 text model: the GDN gates
// "*.linear_attn.in_proj_a.weight", "*.linear_attn.in_proj_b.weight" and the
// MTP head "mtp.*". Embeddings, norms and other parameters are never quantized
// (the weight schema allows nvfp4 only for projections and the lm_head), nor is
// the lm_head unless QuantOptions::lm_head asks, nor the dflash2 /
// draft_lm_head / vision sections.
std::vector<std::string> default_nvfp4_keep();

struct QuantOptions {
  bool nvfp4 = false;
  std::vector<std::string> keep = default_nvfp4_keep();
  Nvfp4ScaleGroups scale_groups = Nvfp4ScaleGroups::kFused;
  // --quant-lm-head nvfp4: the lm_head too (its own weight_scale_2). A tied
  // model gets a stored nvfp4 lm_head.weight made from the embedding, which
  // stays as it is for the token lookups. Decode reads the lm_head every token:
  // at 4.5 bits it reads 28% of the bf16 bytes, at the accuracy cost
  // docs/pack.md measures.
  bool lm_head = false;
};

bool glob_match(std::string_view pattern, std::string_view name);

// What --quant nvfp4 does with one projection of the weight schema stored as a
// plain float: quantize it, keep it because a `keep` glob matches (every
// matching glob's index is set in `keep_used` when given), or keep it because
// its rows are not whole 16-element blocks. The packer and the memory plan
// (engine/plan/) share this policy.
enum class Nvfp4Choice { kQuantize, kKeptByPolicy, kKeptByShape };
Nvfp4Choice nvfp4_choice(const std::string &name,
                         std::span<const int64_t> shape,
                         const std::vector<std::string> &keep,
                         std::vector<bool> *keep_used = nullptr);

// The fused group of a projection under kFused ("model.layers.3.self_attn.qkv",
// "...mlp.gate_up",
// "...linear_attn.in"), or "" for a projection that is in none (o_proj,
// down_proj, out_proj, mtp.fc).
std::string nvfp4_scale_group(const std::string &name);

struct QuantReport {
  size_t quantized = 0;
  std::vector<std::string> kept; // projections left as they are by the policy
  uint64_t bytes_before = 0,
           bytes_after = 0; // of the quantized tensors (the lm_head included)
  bool lm_head = false; // --quant-lm-head: lm_head.weight was written as nvfp4
};

// Replaces every projection of the weight schema that is stored as f32/f16/bf16
// and not matched by a keep glob with an nvfp4 tensor, quantized by
// quantize_nvfp4 (engine/quant/nvfp4.h) when the writer asks for it. A
// user-given keep glob that matches nothing is an error (a typo would silently
// quantize everything).
QuantReport plan_nvfp4_quantization(const ModelConfig &config,
                                    const QuantOptions &options,
                                    TensorPlan &plan);

// A plain float tensor (f32/f16/bf16) as f32; a converted one (`produce`, e.g.
// a dequantized FP8 weight) is produced first.
std::vector<float> tensor_to_f32(const PlannedTensor &t);

} // namespace ninfer
