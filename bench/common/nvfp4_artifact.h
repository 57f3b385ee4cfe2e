// Owns deriving the benchmarks' NVFP4 artifacts from a packed bf16 one
// (projections quantized, the rest copied).
#pragma once

#include <cstdint>
#include <string>

namespace ninfer::bench {

// Writes `dst` with ninfer-pack's own quantization (`ninfer-pack --from SRC
// --quant nvfp4 --quant-scale-groups tensor`, plus `--quant-lm-head nvfp4` when
// `lm_head`): the projections quantized with a weight_scale_2 each, minus the
// default exclusions (the GDN in_proj_a / in_proj_b gates, mtp.*), the rest
// copied. Returns the number of tensors quantized (the lm_head included).
int64_t write_nvfp4_artifact(const std::string &src, const std::string &dst,
                             bool lm_head = false);

} // namespace ninfer::bench
