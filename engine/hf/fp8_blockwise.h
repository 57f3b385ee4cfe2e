// Owns block-wise FP8 checkpoints (transformers' FineGrainedFP8 layout): format detection, part checks, dequantization.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/hf/safetensors.h"

namespace ninfer {

// config.json `quantization_config: {quant_method: "fp8", fmt: "e4m3", weight_block_size: [br, bc], ...}`:
// a quantized linear M stores `M.weight` float8_e4m3fn [N, K] and `M.weight_scale_inv` f32
// [ceil(N / br), ceil(K / bc)] (FP8Linear's parameters; the blocks at the right and bottom edges are partial).
struct Fp8BlockwiseFormat {
  int64_t block_rows = 0;
  int64_t block_cols = 0;
  std::vector<std::string> modules_to_not_convert{};  // as declared; those modules are stored unquantized
  nlohmann::json description{};                       // the quantization_config object as found
};

// Reads config.json's quantization_config (or text_config's). nullopt when there is none or its quant_method is
// not "fp8". An fp8 variant ninfer does not import (fmt other than e4m3, activation_scheme static, scale_fmt ue8m0,
// no or a malformed weight_block_size) throws ErrorKind::kUnsupported naming the field and value.
std::optional<Fp8BlockwiseFormat> detect_fp8_blockwise(const nlohmann::json& config, const std::string& source);

// The scale tensor name of an FP8 weight name ("M.weight" -> "M.weight_scale_inv").
std::string fp8_scale_name(const std::string& weight_name);

// Checks one quantized weight and its scales: `weight` F8_E4M3 of rank 2, `scale_inv` F32 of shape
// [ceil(N / br), ceil(K / bc)], every scale finite, no NaN code (0x7F / 0xFF) in the weight. Throws
// ErrorKind::kCorrupt naming `file`, both tensors and the shapes.
void check_fp8_blockwise(const SafetensorsTensor& weight, const SafetensorsTensor& scale_inv,
                         const Fp8BlockwiseFormat& format, const std::string& file);

// w[r][c] = e4m3(weight[r][c]) * scale_inv[r / br][c / bc], one f32 multiplication per element: transformers'
// _dequantize_fp8_weight / Fp8Dequantize in f32. `out` holds rows * cols floats. Call check_fp8_blockwise first.
void dequantize_fp8_blockwise(std::span<const std::byte> weight, std::span<const std::byte> scale_inv, int64_t rows,
                              int64_t cols, const Fp8BlockwiseFormat& format, std::span<float> out);

}  // namespace ninfer
