// Owns preparing the synthetic Qwen3.5-shaped models the engine benchmarks run: the bf16 artifact packed from a
// generated checkpoint of a chosen size, and its NVFP4 derivative, kept in a directory for reruns.
#pragma once

#include <string>

namespace ninfer::bench {

struct SyntheticModel {
  std::string bf16;   // <dir>/model.ninfer
  std::string nvfp4;  // <dir>/model-nvfp4.ninfer (empty unless asked for)
  std::string hf;     // <dir>/hf, the checkpoint (present only with keep_hf)
};

// Packs the model of ~`gb` GB of bf16 weights (synthetic_qwen35_config) unless `dir` has it already, and its NVFP4
// derivative when `nvfp4`; `keep_hf` keeps the generated checkpoint (e.g. for converting it to GGUF).
SyntheticModel prepare_synthetic_model(const std::string& dir, double gb, bool nvfp4, bool keep_hf = false);

}  // namespace ninfer::bench
