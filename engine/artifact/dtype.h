// Owns the element types a .ninfer artifact can hold and their storage sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace ninfer {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kI8,
  kI32,
  kF8E4M3,  // OCP FP8 E4M3 ("fn": no infinities, max 448)
  kNVFP4,   // packed E2M1 nibbles + E4M3 block-16 scales + f32 tensor scales; see nvfp4_layout()
};

std::string_view dtype_name(DType dtype);                  // "f32", "bf16", "nvfp4", ...
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes of one element for the plain dtypes; 0 for kNVFP4 (not a whole number of bytes).
uint64_t dtype_element_bytes(DType dtype);

// Byte offsets of the three parts of one NVFP4 tensor of logical shape [..., K] (rows = product of the
// leading dimensions). The layout is written down in docs/artifact-format.md:
//   [0, scales_offset)                 E2M1 codes, row-major [rows, K/2]: element 2j in the low nibble
//                                      of byte j, element 2j+1 in the high nibble
//   [scales_offset, tensor_scale_offset) E4M3 block scales, row-major [rows, K/16], not swizzled
//   [tensor_scale_offset, total)       16-byte trailer: f32 weight_scale_2 (dequant multiplier,
//                                      ModelOpt convention), f32 input_scale (0 when absent), 8 zero bytes
struct Nvfp4Layout {
  uint64_t rows = 0;
  uint64_t cols = 0;  // K, a multiple of 16
  uint64_t scales_offset = 0;
  uint64_t tensor_scale_offset = 0;
  uint64_t total_bytes = 0;
};
constexpr uint64_t kNvfp4BlockSize = 16;
constexpr uint64_t kNvfp4TrailerBytes = 16;
// Returns nullopt when the shape cannot be NVFP4 (rank 0, or last dimension not a multiple of 16).
std::optional<Nvfp4Layout> nvfp4_layout(std::span<const int64_t> shape);

// Number of elements; nullopt on a negative dimension or overflow.
std::optional<uint64_t> element_count(std::span<const int64_t> shape);
// Storage bytes of a tensor; nullopt when the shape is invalid for the dtype.
std::optional<uint64_t> tensor_storage_bytes(DType dtype, std::span<const int64_t> shape);

}  // namespace ninfer
