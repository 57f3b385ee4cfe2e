// Owns ninfer-pack's engine side: an HF checkpoint or an existing artifact (+ extra tensors, quantization, draft head) → one .ninfer artifact.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/pack/draft_vocab.h"
#include "engine/pack/quant_plan.h"

namespace ninfer {

struct PackOptions {
  std::string hf_dir = {};                        // a Hugging Face checkpoint directory (plain, ModelOpt or CT NVFP4), or
  std::string from_artifact = {};                 // an existing artifact: metadata, blobs and every tensor are copied
  std::vector<std::string> add_safetensors = {};  // more tensors (dflash2.*, draft_lm_head.*, ...), routed by canonical name
  std::string output = {};
  QuantOptions quant = {};       // --quant nvfp4 and its policy
  DraftVocabOptions draft = {};  // --draft-vocab N --draft-corpus PATH
  bool show_progress = true;
  // --reasoning-budget N: the artifact's default reasoning budget, written as the generation config's
  // reasoning_budget (over the checkpoint's or source artifact's); -1 removes it; unset keeps what the source has.
  std::optional<int64_t> reasoning_budget = {};
};

struct PackReport {
  uint64_t file_bytes = 0;
  uint64_t tensor_bytes = 0;
  size_t tensors = 0;
  std::map<std::string, size_t> tensors_per_section;
  std::string imported;       // "modelopt" / "compressed-tensors" / "fp8" for a pre-quantized checkpoint, else ""
  size_t fp8_dequantized = 0;  // block-wise FP8 weights dequantized to bf16
  QuantReport quant;          // what --quant nvfp4 did
  size_t draft_vocab = 0;     // rows of the draft head written (0: none)
  double draft_coverage = 0;  // fraction of corpus tokens the draft vocabulary holds
  double seconds = 0;         // wall time of the whole pack, reading and writing
};

// Canonical artifact name and section of a checkpoint tensor name:
//   model.language_model.X → model.X (main); mtp.* → mtp; dflash2.* → dflash2; draft_lm_head.* → draft_lm_head;
//   model.visual.* / visual.* → vision; others as-is (main).
struct CanonicalName {
  std::string name;
  std::string section;
};
CanonicalName canonical_tensor_name(const std::string& hf_name);

// Validates everything (config, dtypes, shapes against the config, name clashes, quantization policy)
// before it writes a byte, then writes the artifact atomically. Exactly one of hf_dir / from_artifact.
// Throws Error with one clear line; no output file on failure.
PackReport pack_artifact(const PackOptions& options);
// The same (the name older callers use).
inline PackReport pack_hf_checkpoint(const PackOptions& options) { return pack_artifact(options); }

}  // namespace ninfer
