#include "bench/common/synthetic_model.h"

#include <filesystem>

#include "bench/common/nvfp4_artifact.h"
#include "bench/common/synthetic_checkpoint.h"
#include "engine/pack/packer.h"

namespace ninfer::bench {

SyntheticModel prepare_synthetic_model(const std::string& dir, double gb, bool nvfp4, bool keep_hf) {
  SyntheticModel m{.bf16 = dir + "/model.ninfer", .nvfp4 = nvfp4 ? dir + "/model-nvfp4.ninfer" : std::string(),
                   .hf = keep_hf ? dir + "/hf" : std::string()};
  const std::string hf = dir + "/hf";
  if (!std::filesystem::exists(m.bf16) || (keep_hf && !std::filesystem::exists(hf + "/model.safetensors"))) {
    write_synthetic_checkpoint(hf, synthetic_qwen35_config(static_cast<uint64_t>(gb * 1e9)));
    if (!std::filesystem::exists(m.bf16)) pack_hf_checkpoint({.hf_dir = hf, .output = m.bf16, .show_progress = true});
    if (!keep_hf) std::filesystem::remove_all(hf);
  }
  if (nvfp4 && !std::filesystem::exists(m.nvfp4)) write_nvfp4_artifact(m.bf16, m.nvfp4);
  return m;
}

}  // namespace ninfer::bench
