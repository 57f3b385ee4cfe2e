// Owns the bridge from an opened artifact to a checked model description (config + weight schema).
#pragma once

#include "engine/artifact/artifact.h"
#include "engine/model/model_config.h"

namespace ninfer {

// Parses the artifact's config and checks every tensor the config requires (presence, shape, dtype).
// Throws Error naming the artifact file and the tensor at fault.
ModelConfig load_model_config(const Artifact& artifact);

}  // namespace ninfer
