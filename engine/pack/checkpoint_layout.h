// Owns which Hugging Face checkpoint layout ninfer-pack reads (text-only or multimodal Qwen3.5) and what the artifact records of it.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/hf/hf_checkpoint.h"
#include "engine/pack/tensor_plan.h"

namespace ninfer {

// The text model's tensors come either as a text-only checkpoint's (model.layers.*, model.embed_tokens.*, ...) or
// as a multimodal one's (model.language_model.*, beside model.visual.*); canonical_tensor_name() maps both to the
// same artifact names. A checkpoint that mixes the two spellings is refused, naming one tensor of each.
void check_checkpoint_layout(const HfCheckpoint& ck);

// The metadata of the vision section (nullopt when the plan has no vision tensors): {"config": the config's
// vision_config (or null), "tensors", "bytes", "executed": false}. Logs what goes there and that ninfer does not
// run it; warns when vision weights come without a vision_config.
std::optional<nlohmann::json> vision_section_metadata(const nlohmann::json& config, const TensorPlan& plan,
                                                      const std::string& source);

}  // namespace ninfer
