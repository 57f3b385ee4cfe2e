// Owns the human-readable summary of an artifact (`ninfer-pack --inspect`, the server's startup log).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "engine/artifact/artifact.h"

namespace ninfer {

struct ArtifactSummary {
  std::string architecture;
  uint64_t file_bytes = 0;
  size_t tensors = 0;
  std::map<std::string, uint64_t> bytes_per_section;
  std::map<std::string, size_t> tensors_per_section;
  std::map<std::string, uint64_t> bytes_per_dtype;
  std::map<std::string, uint64_t> blob_bytes;
  bool has_chat_template = false;
};

ArtifactSummary summarize(const Artifact& artifact);
// Multi-line text: path, version, architecture, config highlights, and the tables above.
std::string format_summary(const Artifact& artifact, const ArtifactSummary& summary);

}  // namespace ninfer
