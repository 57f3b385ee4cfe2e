// Owns deriving the accuracy benchmark's bf16 reference artifact from one stored in f32 / f16 (every float tensor → bf16).
#pragma once

#include <cstdint>
#include <string>

namespace ninfer::bench {

// Writes `dst`: `src` with every f32 and f16 tensor rounded to bf16 (round to nearest even, as a bf16 checkpoint
// saved by torch), all other tensors, the metadata and the blobs as they are. Returns the number of tensors converted
// (0: `src` was bf16 already; `dst` is then a copy).
int64_t write_bf16_artifact(const std::string& src, const std::string& dst);

}  // namespace ninfer::bench
