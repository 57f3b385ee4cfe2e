#include "engine/model/model_artifact.h"

#include "engine/model/weight_schema.h"

namespace ninfer {

ModelConfig load_model_config(const Artifact& artifact) {
  ModelConfig config = ModelConfig::from_hf_json(artifact.config(), artifact.path());
  check_weights(
      config,
      [&](const std::string& name) -> std::optional<FoundWeight> {
        const TensorInfo* t = artifact.find(name);
        if (!t) return std::nullopt;
        return FoundWeight{t->dtype, t->shape};
      },
      artifact.path());
  return config;
}

}  // namespace ninfer
