// Owns deriving one artifact from another for the benchmarks: every tensor copied, or re-encoded by a caller's rule.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/artifact/artifact.h"
#include "engine/artifact/artifact_writer.h"

namespace ninfer::bench {

// For one source tensor and its stored bytes: the entry to write instead (new dtype and producer; name, section and
// shape are the source's unless the rule changes them), or nullopt to copy the tensor as it is.
using TensorRewrite = std::function<std::optional<TensorEntry>(const TensorInfo& info, std::span<const std::byte> bytes)>;

// Writes `dst` from `src`: metadata (with `metadata_patch` merged over it), blobs, and every tensor through `rewrite`.
// Returns how many tensors the rule re-encoded.
int64_t rewrite_artifact(const std::string& src, const std::string& dst, const nlohmann::json& metadata_patch,
                         const TensorRewrite& rewrite, bool show_progress);

}  // namespace ninfer::bench
