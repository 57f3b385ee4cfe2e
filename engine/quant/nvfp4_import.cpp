#include "engine/quant/nvfp4_import.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstring>

#include "engine/artifact/dtype.h"
#include "engine/core/error.h"

namespace ninfer {

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string json_string(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

void require_group_size_16(const nlohmann::json& group_size, const std::string& source, const char* where) {
  if (group_size.is_null()) return;
  if (!group_size.is_number_integer() || group_size.get<int64_t>() != static_cast<int64_t>(kNvfp4BlockSize))
    fail(ErrorKind::kUnsupported, "{}: {} group_size {} (NVFP4 needs 16)", source, where, group_size.dump());
}

Nvfp4CheckpointFormat modelopt_format(const nlohmann::json& q, const std::string& source, const char* where) {
  const std::string algo = json_string(q, "quant_algo");
  if (algo != "NVFP4")
    fail(ErrorKind::kUnsupported, "{}: {} quant_algo '{}' (ninfer imports ModelOpt NVFP4 only)", source, where, algo);
  const std::string kv = json_string(q, "kv_cache_quant_algo");
  if (!kv.empty())
    fail(ErrorKind::kUnsupported, "{}: {} kv_cache_quant_algo '{}' (ninfer imports weights only; re-export without KV quantization)",
         source, where, kv);
  require_group_size_16(q.value("group_size", nlohmann::json()), source, where);
  return {Nvfp4Source::kModelOpt, q};
}

Nvfp4CheckpointFormat compressed_tensors_format(const nlohmann::json& q, const std::string& source) {
  const std::string format = json_string(q, "format");
  if (format != "nvfp4-pack-quantized")
    fail(ErrorKind::kUnsupported, "{}: compressed-tensors format '{}' (ninfer imports nvfp4-pack-quantized only)", source,
         format);
  if (q.contains("config_groups") && q["config_groups"].is_object()) {
    for (const auto& [name, group] : q["config_groups"].items()) {
      if (!group.is_object() || !group.contains("weights") || !group["weights"].is_object()) continue;
      const auto& w = group["weights"];
      if (w.value("num_bits", 4) != 4 || json_string(w, "type") != "float")
        fail(ErrorKind::kUnsupported, "{}: compressed-tensors config group '{}' is not FP4 weights ({})", source, name,
             w.dump());
      require_group_size_16(w.value("group_size", nlohmann::json()), source, "compressed-tensors weights");
    }
  }
  return {Nvfp4Source::kCompressedTensors, q};
}

}  // namespace

std::string_view nvfp4_source_name(Nvfp4Source source) {
  return source == Nvfp4Source::kModelOpt ? "modelopt" : "compressed-tensors";
}

std::optional<Nvfp4CheckpointFormat> detect_nvfp4_checkpoint(const nlohmann::json& config,
                                                             const nlohmann::json& hf_quant_config,
                                                             const std::string& source) {
  const nlohmann::json* qc = nullptr;
  if (config.is_object() && config.contains("quantization_config") && config["quantization_config"].is_object())
    qc = &config["quantization_config"];
  else if (config.is_object() && config.contains("text_config") && config["text_config"].is_object() &&
           config["text_config"].contains("quantization_config"))
    qc = &config["text_config"]["quantization_config"];
  if (qc) {
    const std::string method = lower(json_string(*qc, "quant_method"));
    if (method == "compressed-tensors") return compressed_tensors_format(*qc, source + "/config.json");
    if (method == "modelopt") return modelopt_format(*qc, source + "/config.json", "quantization_config");
    fail(ErrorKind::kUnsupported, "{}/config.json: quantization_config quant_method '{}' (ninfer imports modelopt "
         "NVFP4 and compressed-tensors nvfp4-pack-quantized)", source, json_string(*qc, "quant_method"));
  }
  if (hf_quant_config.is_object()) {
    if (!hf_quant_config.contains("quantization") || !hf_quant_config["quantization"].is_object())
      fail(ErrorKind::kCorrupt, "{}/hf_quant_config.json: no \"quantization\" object", source);
    return modelopt_format(hf_quant_config["quantization"], source + "/hf_quant_config.json", "quantization");
  }
  return std::nullopt;
}

Nvfp4PartNames nvfp4_part_names(Nvfp4Source source, const std::string& module) {
  if (source == Nvfp4Source::kModelOpt)
    return {module + ".weight", module + ".weight_scale", module + ".weight_scale_2", module + ".input_scale"};
  return {module + ".weight_packed", module + ".weight_scale", module + ".weight_global_scale",
          module + ".input_global_scale"};
}

std::optional<std::string> nvfp4_codes_module(Nvfp4Source source, const std::string& name) {
  const std::string_view suffix = source == Nvfp4Source::kModelOpt ? ".weight" : ".weight_packed";
  if (!ends_with(name, suffix)) return std::nullopt;
  return name.substr(0, name.size() - suffix.size());
}

float nvfp4_multiplier_from(Nvfp4Source source, float stored) {
  if (source == Nvfp4Source::kModelOpt) return stored;
  return 1.0f / stored;
}

void check_nvfp4_parts(std::span<const std::byte> codes, std::span<const std::byte> scales, float weight_scale_2,
                       float input_scale, uint64_t rows, uint64_t cols, const std::string& what) {
  const std::array<int64_t, 2> shape = {static_cast<int64_t>(rows), static_cast<int64_t>(cols)};
  const auto layout = nvfp4_layout(shape);
  if (!layout) fail(ErrorKind::kCorrupt, "{}: shape [{}, {}] cannot be nvfp4", what, rows, cols);
  const uint64_t code_bytes = rows * cols / 2, scale_bytes = rows * cols / kNvfp4BlockSize;
  if (codes.size() != code_bytes || scales.size() != scale_bytes)
    fail(ErrorKind::kCorrupt, "{}: nvfp4 parts of [{}, {}] need {} code and {} scale bytes, found {} and {}", what, rows,
         cols, code_bytes, scale_bytes, codes.size(), scales.size());
  if (!std::isfinite(weight_scale_2) || !(weight_scale_2 > 0.0f))
    fail(ErrorKind::kCorrupt, "{}: per-tensor weight scale {} must be finite and > 0", what, weight_scale_2);
  if (!std::isfinite(input_scale) || input_scale < 0.0f)
    fail(ErrorKind::kCorrupt, "{}: input scale {} must be finite and >= 0", what, input_scale);
  const auto* s = reinterpret_cast<const uint8_t*>(scales.data());
  for (uint64_t i = 0; i < scale_bytes; ++i) {
    if ((s[i] & 0x7F) == 0x7F)
      fail(ErrorKind::kCorrupt, "{}: block scale {} (row {}, block {}) is NaN (0x{:02X})", what, i,
           i / (cols / kNvfp4BlockSize), i % (cols / kNvfp4BlockSize), s[i]);
  }
}

void assemble_nvfp4(std::span<const std::byte> codes, std::span<const std::byte> scales, float weight_scale_2,
                    float input_scale, uint64_t rows, uint64_t cols, std::span<std::byte> out, const std::string& what) {
  check_nvfp4_parts(codes, scales, weight_scale_2, input_scale, rows, cols, what);
  const std::array<int64_t, 2> shape = {static_cast<int64_t>(rows), static_cast<int64_t>(cols)};
  const auto layout = nvfp4_layout(shape);
  if (out.size() != layout->total_bytes)
    fail(ErrorKind::kInternal, "{}: nvfp4 output buffer has {} bytes, the layout needs {}", what, out.size(),
         layout->total_bytes);
  const uint64_t code_bytes = rows * cols / 2, scale_bytes = rows * cols / kNvfp4BlockSize;
  std::memset(out.data(), 0, out.size());
  std::memcpy(out.data(), codes.data(), code_bytes);
  std::memcpy(out.data() + layout->scales_offset, scales.data(), scale_bytes);
  std::memcpy(out.data() + layout->tensor_scale_offset, &weight_scale_2, sizeof(float));
  std::memcpy(out.data() + layout->tensor_scale_offset + 4, &input_scale, sizeof(float));
}

}  // namespace ninfer
