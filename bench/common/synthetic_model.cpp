#include "bench/common/synthetic_model.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "bench/common/nvfp4_artifact.h"
#include "bench/common/synthetic_checkpoint.h"
#include "engine/artifact/mapped_file.h"
#include "engine/pack/packer.h"

namespace ninfer::bench {

SyntheticModel prepare_synthetic_model(const std::string &dir,
                                       const nlohmann::json &config, bool nvfp4,
                                       bool keep_hf, bool nvfp4_head) {
  SyntheticModel m{.bf16 = dir + "/model.ninfer",
                   .nvfp4 = nvfp4 ? dir + "/model-nvfp4.ninfer" : std::string(),
                   .nvfp4_head = nvfp4_head ? dir + "/model-nvfp4-head.ninfer"
                                            : std::string(),
                   .hf = keep_hf ? dir + "/hf" : std::string()};
  const std::string hf = dir + "/hf";
  const auto recorded_path = path_from_utf8(dir + "/synthetic-config.json");
  nlohmann::json recorded;
  if (std::ifstream in(recorded_path); in)
    recorded = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (recorded != config) {
    // Artifacts of another shape (or of a bench that did not record one): make
    // this shape's afresh.
    if (std::filesystem::exists(path_from_utf8(m.bf16)))
      std::fprintf(
          stderr,
          "%s holds another synthetic model: making the requested one\n",
          dir.c_str());
    for (const auto &stale : {m.bf16, dir + "/model-nvfp4.ninfer",
                              dir + "/model-nvfp4-head.ninfer", hf})
      std::filesystem::remove_all(path_from_utf8(stale));
  }
  if (!std::filesystem::exists(path_from_utf8(m.bf16)) ||
      (keep_hf &&
       !std::filesystem::exists(path_from_utf8(hf + "/model.safetensors")))) {
    write_synthetic_checkpoint(hf, config);
    if (!std::filesystem::exists(path_from_utf8(m.bf16)))
      pack_hf_checkpoint(
          {.hf_dir = hf, .output = m.bf16, .show_progress = true});
    if (!keep_hf)
      std::filesystem::remove_all(path_from_utf8(hf));
    std::ofstream(recorded_path) << config.dump(2);
  }
  if (nvfp4 && !std::filesystem::exists(path_from_utf8(m.nvfp4)))
    write_nvfp4_artifact(m.bf16, m.nvfp4);
  if (nvfp4_head && !std::filesystem::exists(path_from_utf8(m.nvfp4_head)))
    write_nvfp4_artifact(m.bf16, m.nvfp4_head, /*lm_head=*/true);
  return m;
}

} // namespace ninfer::bench
