// Owns preparing the synthetic Qwen3.5-shaped models the engine benchmarks run:
// the bf16 artifact packed from a generated checkpoint of a chosen size, and
// its NVFP4 derivative, kept in a directory for reruns.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ninfer::bench {

struct SyntheticModel {
  std::string bf16;       // <dir>/model.ninfer
  std::string nvfp4;      // <dir>/model-nvfp4.ninfer (empty unless asked for)
  std::string nvfp4_head; // <dir>/model-nvfp4-head.ninfer: the same with an
                          // nvfp4 lm_head (empty unless asked for)
  std::string hf; // <dir>/hf, the checkpoint (present only with keep_hf)
};

// Packs the model of HF config `config` (synthetic_config) unless `dir` has it
// already, and its NVFP4 derivative when `nvfp4` (with an nvfp4 lm_head too
// when `nvfp4_head`); `keep_hf` keeps the generated checkpoint (e.g. for
// converting it to GGUF). `dir`/synthetic-config.json records the config the
// artifacts were made from: a different one makes them again.
SyntheticModel prepare_synthetic_model(const std::string &dir,
                                       const nlohmann::json &config, bool nvfp4,
                                       bool keep_hf = false,
                                       bool nvfp4_head = false);

} // namespace ninfer::bench
