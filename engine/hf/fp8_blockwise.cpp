#include "engine/hf/fp8_blockwise.h"

#include <array>
#include <cmath>
#include <cstring>

#include <fmt/ranges.h>

#include "engine/core/error.h"
#include "engine/quant/nvfp4.h"

namespace ninfer {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A string field of quantization_config: `fallback` when absent, refused when another JSON type.
std::string string_field(const nlohmann::json& qc, const char* key, const char* fallback, const std::string& where) {
  if (!qc.contains(key) || qc[key].is_null()) return fallback;
  if (!qc[key].is_string())
    fail(ErrorKind::kUnsupported, "{}: quantization_config.{} must be a string, got {}", where, key, qc[key].dump());
  return qc[key].get<std::string>();
}

const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int i = 0; i < 256; ++i) t[i] = e4m3_decode(static_cast<uint8_t>(i));
    return t;
  }();
  return table;
}

}  // namespace

std::optional<Fp8BlockwiseFormat> detect_fp8_blockwise(const nlohmann::json& config, const std::string& source) {
  const nlohmann::json* qc = nullptr;
  if (config.is_object() && config.contains("quantization_config") && config["quantization_config"].is_object())
    qc = &config["quantization_config"];
  else if (config.is_object() && config.contains("text_config") && config["text_config"].is_object() &&
           config["text_config"].contains("quantization_config") &&
           config["text_config"]["quantization_config"].is_object())
    qc = &config["text_config"]["quantization_config"];
  if (!qc || !(*qc).contains("quant_method") || (*qc)["quant_method"] != "fp8") return std::nullopt;
  const std::string where = source + "/config.json";
  const std::string fmt_name = string_field(*qc, "fmt", "e4m3", where);
  if (fmt_name != "e4m3")
    fail(ErrorKind::kUnsupported, "{}: quantization_config.fmt '{}' (ninfer imports fp8 e4m3 only)", where, fmt_name);
  const std::string activation = string_field(*qc, "activation_scheme", "dynamic", where);
  if (activation != "dynamic")
    fail(ErrorKind::kUnsupported, "{}: quantization_config.activation_scheme '{}' (ninfer imports the weights of "
         "'dynamic' fp8 checkpoints; static activation scales are not imported)", where, activation);
  const std::string scale_fmt = string_field(*qc, "scale_fmt", "float", where);
  if (scale_fmt != "float")
    fail(ErrorKind::kUnsupported, "{}: quantization_config.scale_fmt '{}' (ninfer imports f32 weight_scale_inv, "
         "scale_fmt 'float')", where, scale_fmt);
  if (qc->contains("modules_to_convert") && !(*qc)["modules_to_convert"].is_null() &&
      !(*qc)["modules_to_convert"].empty())
    fail(ErrorKind::kUnsupported, "{}: quantization_config.modules_to_convert {} (FP8 embeddings are not imported)",
         where, (*qc)["modules_to_convert"].dump());
  Fp8BlockwiseFormat f;
  f.description = *qc;
  f.block_rows = f.block_cols = 128;  // FineGrainedFP8Config's default when the field is absent
  if (qc->contains("weight_block_size")) {
    const nlohmann::json& b = (*qc)["weight_block_size"];
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned() ||
        b[0].get<int64_t>() <= 0 || b[1].get<int64_t>() <= 0)
      fail(ErrorKind::kUnsupported, "{}: quantization_config.weight_block_size {} (ninfer imports block-wise fp8: "
           "two positive integers [rows, cols]; per-tensor scales are not imported)", where, b.dump());
    f.block_rows = b[0].get<int64_t>();
    f.block_cols = b[1].get<int64_t>();
  }
  for (const char* key : {"modules_to_not_convert", "ignored_layers"})
    if (qc->contains(key) && (*qc)[key].is_array())
      for (const auto& m : (*qc)[key])
        if (m.is_string()) f.modules_to_not_convert.push_back(m.get<std::string>());
  return f;
}

std::string fp8_scale_name(const std::string& weight_name) { return weight_name + "_scale_inv"; }

void check_fp8_blockwise(const SafetensorsTensor& weight, const SafetensorsTensor& scale_inv,
                         const Fp8BlockwiseFormat& format, const std::string& file) {
  if (weight.st_dtype != "F8_E4M3" || weight.shape.size() != 2)
    fail(ErrorKind::kCorrupt, "{}: FP8 weight '{}' must be F8_E4M3 [rows, cols], found {} [{}]", file, weight.name,
         weight.st_dtype, fmt::join(weight.shape, ", "));
  const int64_t rows = weight.shape[0], cols = weight.shape[1];
  const std::vector<int64_t> grid = {ceil_div(rows, format.block_rows), ceil_div(cols, format.block_cols)};
  if (scale_inv.st_dtype != "F32" || scale_inv.shape != grid)
    fail(ErrorKind::kCorrupt, "{}: '{}' must be F32 [{}] (one scale per {}x{} block of '{}' [{}, {}]), found {} [{}]",
         file, scale_inv.name, fmt::join(grid, ", "), format.block_rows, format.block_cols, weight.name, rows, cols,
         scale_inv.st_dtype, fmt::join(scale_inv.shape, ", "));
  for (size_t i = 0; i < static_cast<size_t>(grid[0] * grid[1]); ++i) {
    float s;
    std::memcpy(&s, scale_inv.data.data() + 4 * i, 4);
    if (!std::isfinite(s))
      fail(ErrorKind::kCorrupt, "{}: '{}' block [{}, {}] is {} (must be finite)", file, scale_inv.name,
           i / static_cast<size_t>(grid[1]), i % static_cast<size_t>(grid[1]), s);
  }
  for (size_t i = 0; i < weight.data.size(); ++i) {
    const auto code = static_cast<uint8_t>(weight.data[i]);
    if ((code & 0x7Fu) == 0x7Fu)
      fail(ErrorKind::kCorrupt, "{}: FP8 weight '{}' element [{}, {}] is NaN (code 0x{:02X})", file, weight.name,
           i / static_cast<size_t>(cols), i % static_cast<size_t>(cols), code);
  }
}

void dequantize_fp8_blockwise(std::span<const std::byte> weight, std::span<const std::byte> scale_inv, int64_t rows,
                              int64_t cols, const Fp8BlockwiseFormat& format, std::span<float> out) {
  const int64_t grid_cols = ceil_div(cols, format.block_cols);
  NINFER_CHECK(out.size() == static_cast<size_t>(rows * cols) && weight.size() == out.size() &&
               scale_inv.size() == static_cast<size_t>(4 * ceil_div(rows, format.block_rows) * grid_cols));
  const auto& table = e4m3_table();
  std::vector<float> scales(static_cast<size_t>(grid_cols));
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(scales.data(), scale_inv.data() + 4 * (r / format.block_rows) * grid_cols, 4 * scales.size());
    const std::byte* w = weight.data() + r * cols;
    float* o = out.data() + r * cols;
    for (int64_t c = 0; c < cols; ++c) o[c] = table[static_cast<uint8_t>(w[c])] * scales[c / format.block_cols];
  }
}

}  // namespace ninfer
