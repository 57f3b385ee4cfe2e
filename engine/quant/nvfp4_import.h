// Owns reading pre-quantized NVFP4 checkpoints (ModelOpt, compressed-tensors): format detection and part conversion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ninfer {

enum class Nvfp4Source : uint8_t {
  kModelOpt,           // NVIDIA ModelOpt HF export: <m>.weight u8, weight_scale e4m3, weight_scale_2 f32, input_scale f32
  kCompressedTensors,  // compressed-tensors "nvfp4-pack-quantized": <m>.weight_packed, weight_scale,
                       // weight_global_scale (a divisor), input_global_scale (a divisor)
};
std::string_view nvfp4_source_name(Nvfp4Source source);  // "modelopt" | "compressed-tensors"

struct Nvfp4CheckpointFormat {
  Nvfp4Source source = Nvfp4Source::kModelOpt;
  nlohmann::json description;  // the quantization_config / hf_quant_config "quantization" object as found
};

// Reads config.json's "quantization_config" and hf_quant_config.json (either may be null). Returns nullopt
// for an unquantized checkpoint; throws ErrorKind::kUnsupported naming the method or algorithm for any
// other quantization (FP8, AWQ, a CT format other than nvfp4-pack-quantized, a group size other than 16). The packer
// asks detect_fp8_blockwise (engine/hf/fp8_blockwise.h) first and calls this only for a checkpoint that is not FP8.
std::optional<Nvfp4CheckpointFormat> detect_nvfp4_checkpoint(const nlohmann::json& config,
                                                             const nlohmann::json& hf_quant_config,
                                                             const std::string& source);

// Checkpoint tensor names of the parts of the quantized linear `module` (e.g. "model.layers.0.mlp.up_proj").
struct Nvfp4PartNames {
  std::string codes;           // u8 [rows, cols/2]
  std::string block_scales;    // f8_e4m3 [rows, cols/16]
  std::string tensor_scale;    // f32 scalar or [1]
  std::string input_scale;     // f32 scalar or [1]; optional in the checkpoint
};
Nvfp4PartNames nvfp4_part_names(Nvfp4Source source, const std::string& module);
// The module of a codes tensor name, or nullopt when `name` is not one (".weight" for ModelOpt is only a
// codes tensor when the checkpoint also has "<module>.weight_scale").
std::optional<std::string> nvfp4_codes_module(Nvfp4Source source, const std::string& name);

// The artifact's dequantization multiplier from the stored per-tensor scale: ModelOpt's weight_scale_2 /
// input_scale as they are; compressed-tensors' global scales G as 1/G (f32 division; its quantizer divides
// the block scale by G, compressed_tensors.quantization.lifecycle.forward).
float nvfp4_multiplier_from(Nvfp4Source source, float stored);

// The checks of assemble_nvfp4 alone (to validate a whole checkpoint before writing a byte).
void check_nvfp4_parts(std::span<const std::byte> codes, std::span<const std::byte> scales, float weight_scale_2,
                       float input_scale, uint64_t rows, uint64_t cols, const std::string& what);
// Writes one artifact nvfp4 entry (nvfp4_layout()) from checkpoint parts: `codes` [rows, cols/2] with element 2j
// in the low nibble (the order of both libraries), `scales` [rows, cols/16] E4M3 bytes, the f32 multipliers.
// Rejects, naming `what`: part sizes that do not match, NaN block scales (0x7F/0xFF: ModelOpt's all-zero
// tensors), a weight_scale_2 that is not finite and > 0, an input_scale that is not finite and >= 0.
void assemble_nvfp4(std::span<const std::byte> codes, std::span<const std::byte> scales, float weight_scale_2,
                    float input_scale, uint64_t rows, uint64_t cols, std::span<std::byte> out, const std::string& what);

}  // namespace ninfer
