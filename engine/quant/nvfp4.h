// Owns the NVFP4 numerics: E2M1 and E4M3 element codecs and the ModelOpt-exact weight quantizer/dequantizer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ninfer {

// Largest E2M1 magnitude and largest finite E4M3 ("fn") value.
constexpr float kE2M1Max = 6.0f;
constexpr float kE4M3Max = 448.0f;
// Smallest positive E4M3 value (subnormal, 2^-9); ModelOpt clamps block scales to [kE4M3MinScale, 448].
constexpr float kE4M3MinScale = 1.0f / 512.0f;

// FP4 E2M1: bit 3 sign, bits 2..0 index {0, 0.5, 1, 1.5, 2, 3, 4, 6}. Only the low 4 bits of `code` are read.
float e2m1_decode(uint8_t code);
// Round to nearest, ties to even mantissa, saturating at +-6 (docs/nvfp4.md). The sign bit is set when
// x < 0, so -0.1 encodes as 0x8 (negative zero) while -0.0 encodes as 0x0, as ModelOpt's _cast_fp4 does.
// NaN encodes as 0x7 (ModelOpt's searchsorted puts NaN past the last bound).
uint8_t e2m1_encode(float x);

// FP8 E4M3 "fn": bias 7, no Inf, 0x7F / 0xFF are NaN, max 448, subnormals down to 2^-9.
float e4m3_decode(uint8_t code);
// Round to nearest even. Finite values beyond +-448 saturate to +-448 (torch's cast agrees up to 464 and
// gives NaN above; the quantizer never asks for more than 448). NaN encodes as 0x7F.
uint8_t e4m3_encode(float x);

// Per-tensor dequantization multiplier (ModelOpt `weight_scale_2`): amax / (6 * 448) in f32.
float nvfp4_weight_scale_2(float amax);

// Quantizes a row-major f32 matrix [rows, cols] (cols a multiple of 16) into the artifact's nvfp4 entry
// layout (nvfp4_layout() in engine/artifact/dtype.h): codes, block scales, trailer with weight_scale_2 and
// input_scale = 0. `out` must be exactly the layout's total_bytes. The recipe is ModelOpt's
// NVFP4QTensor.quantize (docs/nvfp4.md), bit for bit. Non-finite inputs are rejected (ErrorKind::
// kInvalidArgument, naming the element). An all-zero tensor gives weight_scale_2 = 0, scales 1.0, codes 0
// (ModelOpt produces NaN scales there).
void quantize_nvfp4(const float* w, uint64_t rows, uint64_t cols, std::span<std::byte> out);
// The same with a given weight_scale_2 (finite, > 0), e.g. one shared across fused q/k/v or gate/up
// (ModelOpt passes weights_scaling_factor_2 through the same recipe). A scale_2 below this tensor's
// amax / 2688 makes block scales clamp at 448 and values saturate at +-6, as in ModelOpt.
void quantize_nvfp4(const float* w, uint64_t rows, uint64_t cols, float weight_scale_2, std::span<std::byte> out);

// Expands an nvfp4 entry of shape [rows, cols] back to f32: w = e2m1(code) * (e4m3(scale) * weight_scale_2),
// in that association (ModelOpt's NVFP4QTensor.dequantize; code 0x8 gives +0 as there). `out` holds
// rows*cols floats.
void dequantize_nvfp4(std::span<const std::byte> in, uint64_t rows, uint64_t cols, float* out);

}  // namespace ninfer
