#include "engine/pack/checkpoint_layout.h"

#include <spdlog/spdlog.h>

#include "engine/core/error.h"

namespace ninfer {

void check_checkpoint_layout(const HfCheckpoint& ck) {
  const std::string* multimodal = nullptr;  // a model.language_model.* name
  const std::string* text_only = nullptr;   // a model.* name of the text model spelled as a text-only checkpoint's
  for (const auto& [name, t] : ck.tensors) {
    if (name.starts_with("model.language_model.")) multimodal = &name;
    else if (name.starts_with("model.") && !name.starts_with("model.visual.")) text_only = &name;
  }
  if (multimodal && text_only)
    fail(ErrorKind::kCorrupt, "{}: the text model is spelled both as a multimodal checkpoint's ('{}') and as a "
         "text-only one's ('{}'); a checkpoint has one layout", ck.dir, *multimodal, *text_only);
}

std::optional<nlohmann::json> vision_section_metadata(const nlohmann::json& config, const TensorPlan& plan,
                                                      const std::string& source) {
  size_t tensors = 0;
  uint64_t bytes = 0;
  for (const auto& [name, t] : plan.tensors()) {
    if (t.section != "vision") continue;
    ++tensors;
    bytes += *tensor_storage_bytes(t.dtype, t.shape);
  }
  const bool has_config = config.is_object() && config.contains("vision_config") && config["vision_config"].is_object();
  if (tensors == 0) {
    if (has_config)
      spdlog::info("{}: config.json has a vision_config but the checkpoint has no model.visual.* weights; the artifact "
                   "carries no vision section", source);
    return std::nullopt;
  }
  if (!has_config)
    spdlog::warn("{}: {} vision tensors but no vision_config in config.json; they are carried without one", source,
                 tensors);
  spdlog::info("{}: {} vision tensors ({} bytes) go to section 'vision'; ninfer serves text only and does "
               "not run the vision tower", source, tensors, bytes);
  return nlohmann::json{{"config", has_config ? config["vision_config"] : nlohmann::json(nullptr)},
                        {"tensors", tensors},
                        {"bytes", bytes},
                        {"executed", false}};
}

}  // namespace ninfer
