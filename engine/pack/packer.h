// Owns turning a Hugging Face checkpoint directory into one .ninfer artifact (ninfer-pack's engine side).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace ninfer {

struct PackOptions {
  std::string hf_dir;
  std::string output;
  bool show_progress = true;
};

struct PackReport {
  uint64_t file_bytes = 0;
  uint64_t tensor_bytes = 0;
  size_t tensors = 0;
  std::map<std::string, size_t> tensors_per_section;
  double seconds = 0;  // wall time of the whole pack, reading and writing
};

// Canonical artifact name and section of a checkpoint tensor name:
//   model.language_model.X → model.X (main); mtp.* → mtp; dflash2.* → dflash2; draft_lm_head.* → draft_lm_head;
//   model.visual.* / visual.* → vision; others as-is (main).
struct CanonicalName {
  std::string name;
  std::string section;
};
CanonicalName canonical_tensor_name(const std::string& hf_name);

// Validates everything (config, dtypes, shapes against the config) before it writes a byte, then
// writes the artifact atomically. Throws Error with one clear line; no output file on failure.
PackReport pack_hf_checkpoint(const PackOptions& options);

}  // namespace ninfer
