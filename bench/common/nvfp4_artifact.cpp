#include "bench/common/nvfp4_artifact.h"

#include "engine/pack/packer.h"

namespace ninfer::bench {

int64_t write_nvfp4_artifact(const std::string &src, const std::string &dst,
                             bool lm_head) {
  PackOptions o{.from_artifact = src, .output = dst};
  o.quant = {.nvfp4 = true,
             .scale_groups = Nvfp4ScaleGroups::kTensor,
             .lm_head = lm_head};
  const PackReport r = pack_artifact(o);
  return static_cast<int64_t>(r.quant.quantized) + (r.quant.lm_head ? 1 : 0);
}

} // namespace ninfer::bench
