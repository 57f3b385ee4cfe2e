#include "engine/artifact/dtype.h"

#include <array>
#include <utility>

namespace ninfer {

namespace {
constexpr std::array<std::pair<DType, std::string_view>, 7> kNames{{
    {DType::kF32, "f32"},
    {DType::kF16, "f16"},
    {DType::kBF16, "bf16"},
    {DType::kI8, "i8"},
    {DType::kI32, "i32"},
    {DType::kF8E4M3, "f8_e4m3"},
    {DType::kNVFP4, "nvfp4"},
}};

constexpr uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
}  // namespace

std::string_view dtype_name(DType dtype) {
  for (const auto& [d, n] : kNames)
    if (d == dtype) return n;
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& [d, n] : kNames)
    if (n == name) return d;
  return std::nullopt;
}

uint64_t dtype_element_bytes(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kI8: return 1;
    case DType::kI32: return 4;
    case DType::kF8E4M3: return 1;
    case DType::kNVFP4: return 0;
  }
  return 0;
}

std::optional<uint64_t> element_count(std::span<const int64_t> shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    uint64_t ud = static_cast<uint64_t>(d);
    if (ud != 0 && n > UINT64_MAX / ud) return std::nullopt;
    n *= ud;
  }
  return n;
}

std::optional<Nvfp4Layout> nvfp4_layout(std::span<const int64_t> shape) {
  if (shape.empty()) return std::nullopt;
  int64_t k = shape.back();
  if (k <= 0 || k % static_cast<int64_t>(kNvfp4BlockSize) != 0) return std::nullopt;
  auto rows = element_count(shape.first(shape.size() - 1));
  if (!rows) return std::nullopt;
  Nvfp4Layout l;
  l.rows = *rows;
  l.cols = static_cast<uint64_t>(k);
  if (l.rows > (UINT64_MAX / 2) / l.cols) return std::nullopt;
  uint64_t codes = l.rows * l.cols / 2;
  uint64_t scales = l.rows * (l.cols / kNvfp4BlockSize);
  l.scales_offset = round_up(codes, 16);
  l.tensor_scale_offset = round_up(l.scales_offset + scales, 16);
  l.total_bytes = l.tensor_scale_offset + kNvfp4TrailerBytes;
  return l;
}

std::optional<uint64_t> tensor_storage_bytes(DType dtype, std::span<const int64_t> shape) {
  if (dtype == DType::kNVFP4) {
    auto l = nvfp4_layout(shape);
    if (!l) return std::nullopt;
    return l->total_bytes;
  }
  auto n = element_count(shape);
  if (!n) return std::nullopt;
  uint64_t eb = dtype_element_bytes(dtype);
  if (*n > UINT64_MAX / eb) return std::nullopt;
  return *n * eb;
}

}  // namespace ninfer
