// Owns deriving the benchmarks' NVFP4 artifact from a packed bf16 one (projections quantized, the rest copied).
#pragma once

#include <cstdint>
#include <string>

namespace ninfer::bench {

// Writes `dst`: every tensor of `src` as it is, except the weight schema's projections (bf16/f16/f32), which are
// quantized with quantize_nvfp4 (a weight_scale_2 per tensor), minus ModelOpt's default exclusions (the GDN
// in_proj_a / in_proj_b gates). Returns the number of tensors quantized.
int64_t write_nvfp4_artifact(const std::string& src, const std::string& dst);

}  // namespace ninfer::bench
