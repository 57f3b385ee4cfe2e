#include "engine/quant/nvfp4.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/artifact/dtype.h"
#include "engine/core/error.h"

namespace ninfer {

namespace {

constexpr std::array<float, 8> kE2M1Magnitudes = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
// The dequantizer's table: ModelOpt's e2m1_values, where code 0x8 is +0 rather than -0, so that
// dequantize_nvfp4 agrees with NVFP4QTensor.dequantize to the bit (a signed zero changes no sum).
constexpr std::array<float, 16> kE2M1Dequant = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                                0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

Nvfp4Layout checked_layout(uint64_t rows, uint64_t cols, uint64_t bytes, const char* what) {
  if (rows > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
      cols > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    fail(ErrorKind::kInvalidArgument, "{}: nvfp4 shape [{}, {}] is too large", what, rows, cols);
  }
  const std::array<int64_t, 2> shape = {static_cast<int64_t>(rows), static_cast<int64_t>(cols)};
  const auto layout = nvfp4_layout(shape);
  if (!layout) {
    fail(ErrorKind::kInvalidArgument, "{}: shape [{}, {}] cannot be nvfp4 (last dimension must be a multiple of {})",
         what, rows, cols, kNvfp4BlockSize);
  }
  if (bytes != layout->total_bytes) {
    fail(ErrorKind::kInvalidArgument, "{}: nvfp4 [{}, {}] needs {} bytes, the buffer has {}", what, rows, cols,
         layout->total_bytes, bytes);
  }
  return *layout;
}

}  // namespace

float e2m1_decode(uint8_t code) {
  const float magnitude = kE2M1Magnitudes[code & 0x7u];
  return (code & 0x8u) ? -magnitude : magnitude;
}

uint8_t e2m1_encode(float x) {
  const float a = std::fabs(x);
  uint8_t index;
  // Thresholds of round-to-nearest-even: ties at 0.25, 1.25, 2.5, 5 go down (to 0, 1, 2, 4: even
  // mantissa), ties at 0.75, 1.75, 3.5 go up (to 1, 2, 4). NaN fails every comparison and lands on 7.
  if (a <= 0.25f) {
    index = 0;
  } else if (a < 0.75f) {
    index = 1;
  } else if (a <= 1.25f) {
    index = 2;
  } else if (a < 1.75f) {
    index = 3;
  } else if (a <= 2.5f) {
    index = 4;
  } else if (a < 3.5f) {
    index = 5;
  } else if (a <= 5.0f) {
    index = 6;
  } else {
    index = 7;
  }
  return static_cast<uint8_t>((x < 0.0f ? 0x8u : 0x0u) | index);
}

float e4m3_decode(uint8_t code) {
  const float sign = (code & 0x80u) ? -1.0f : 1.0f;
  const int exponent = (code >> 3) & 0xF;
  const int mantissa = code & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);
  return sign * std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
}

uint8_t e4m3_encode(float x) {
  if (std::isnan(x)) return 0x7F;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const float a = std::fabs(x);
  if (a >= kE4M3Max) return sign | 0x7E;
  if (a < 1.0f / 64.0f) {
    // Subnormal range (and the boundary to the smallest normal): a multiple of 2^-9. Scaling by 512 is
    // exact, and nearbyint rounds ties to even in the default rounding mode. 8 * 2^-9 = 2^-6 is code 0x08.
    const float q = std::nearbyint(a * 512.0f);
    return sign | static_cast<uint8_t>(q);
  }
  // Normal: keep 3 of the 23 mantissa bits with round-to-nearest-even, then rebias 127 -> 7. A mantissa
  // carry moves into the exponent, as rounding wants. Since a < 448 here, the result is at most 448
  // (0x7E); the min() only guards that invariant.
  uint32_t bits = std::bit_cast<uint32_t>(a);
  bits += 0x7FFFFu + ((bits >> 20) & 1u);
  const uint32_t code = (bits >> 20) - ((127u - 7u) << 3);
  return sign | static_cast<uint8_t>(std::min<uint32_t>(code, 0x7E));
}

float nvfp4_weight_scale_2(float amax) { return amax / (kE2M1Max * kE4M3Max); }

namespace {

float checked_amax(const float* w, uint64_t rows, uint64_t cols) {
  float amax = 0.0f;
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) {
      const float v = w[r * cols + c];
      if (!std::isfinite(v)) {
        fail(ErrorKind::kInvalidArgument, "quantize_nvfp4: element [{}, {}] of [{}, {}] is {} (must be finite)", r, c,
             rows, cols, v);
      }
      amax = std::max(amax, std::fabs(v));
    }
  }
  return amax;
}

// Steps 2-4 of the recipe in docs/nvfp4.md. `all_zero` (amax == 0) writes scales 1.0 and codes 0.
void quantize_with_scale_2(const float* w, uint64_t rows, uint64_t cols, float scale_2, bool all_zero,
                           std::span<std::byte> out) {
  const Nvfp4Layout layout = checked_layout(rows, cols, out.size(), "quantize_nvfp4");
  const uint64_t blocks_per_row = cols / kNvfp4BlockSize;
  std::memset(out.data(), 0, out.size());
  auto* codes = reinterpret_cast<uint8_t*>(out.data());
  auto* scales = reinterpret_cast<uint8_t*>(out.data() + layout.scales_offset);

  const float six_scale_2 = kE2M1Max * scale_2;  // ModelOpt: per_block_amax / (E2M1_MAX * weight_scale_2)
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t b = 0; b < blocks_per_row; ++b) {
      const float* block = w + r * cols + b * kNvfp4BlockSize;
      uint8_t* block_codes = codes + r * (cols / 2) + b * (kNvfp4BlockSize / 2);
      uint8_t& scale_code = scales[r * blocks_per_row + b];
      if (all_zero) {
        scale_code = e4m3_encode(1.0f);  // every code stays 0 (memset)
        continue;
      }
      float block_amax = 0.0f;
      for (uint64_t i = 0; i < kNvfp4BlockSize; ++i) block_amax = std::max(block_amax, std::fabs(block[i]));
      float scale = block_amax / six_scale_2;
      if (scale == 0.0f) scale = 1.0f;
      scale = std::clamp(scale, kE4M3MinScale, kE4M3Max);
      scale_code = e4m3_encode(scale);
      const float denominator = e4m3_decode(scale_code) * scale_2;
      for (uint64_t i = 0; i < kNvfp4BlockSize; i += 2) {
        const uint8_t lo = e2m1_encode(block[i] / denominator);
        const uint8_t hi = e2m1_encode(block[i + 1] / denominator);
        block_codes[i / 2] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
  }

  const float input_scale = 0.0f;
  std::memcpy(out.data() + layout.tensor_scale_offset, &scale_2, sizeof(float));
  std::memcpy(out.data() + layout.tensor_scale_offset + 4, &input_scale, sizeof(float));
}

}  // namespace

void quantize_nvfp4(const float* w, uint64_t rows, uint64_t cols, std::span<std::byte> out) {
  checked_layout(rows, cols, out.size(), "quantize_nvfp4");
  const float amax = checked_amax(w, rows, cols);
  // An all-zero tensor keeps scale_2 = 0 and gets scales 1.0 and codes 0 (ModelOpt would divide 0 by 0).
  quantize_with_scale_2(w, rows, cols, nvfp4_weight_scale_2(amax), amax == 0.0f, out);
}

void quantize_nvfp4(const float* w, uint64_t rows, uint64_t cols, float weight_scale_2, std::span<std::byte> out) {
  if (!std::isfinite(weight_scale_2) || !(weight_scale_2 > 0.0f)) {
    fail(ErrorKind::kInvalidArgument, "quantize_nvfp4: weight_scale_2 {} for [{}, {}] must be finite and > 0",
         weight_scale_2, rows, cols);
  }
  checked_layout(rows, cols, out.size(), "quantize_nvfp4");
  checked_amax(w, rows, cols);
  quantize_with_scale_2(w, rows, cols, weight_scale_2, false, out);
}

void dequantize_nvfp4(std::span<const std::byte> in, uint64_t rows, uint64_t cols, float* out) {
  const Nvfp4Layout layout = checked_layout(rows, cols, in.size(), "dequantize_nvfp4");
  const uint64_t blocks_per_row = cols / kNvfp4BlockSize;
  const auto* codes = reinterpret_cast<const uint8_t*>(in.data());
  const auto* scales = reinterpret_cast<const uint8_t*>(in.data() + layout.scales_offset);
  float scale_2;
  std::memcpy(&scale_2, in.data() + layout.tensor_scale_offset, sizeof(float));

  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t b = 0; b < blocks_per_row; ++b) {
      const float block_scale = e4m3_decode(scales[r * blocks_per_row + b]) * scale_2;
      const uint8_t* block_codes = codes + r * (cols / 2) + b * (kNvfp4BlockSize / 2);
      float* dst = out + r * cols + b * kNvfp4BlockSize;
      for (uint64_t i = 0; i < kNvfp4BlockSize / 2; ++i) {
        dst[2 * i] = kE2M1Dequant[block_codes[i] & 0x0F] * block_scale;
        dst[2 * i + 1] = kE2M1Dequant[block_codes[i] >> 4] * block_scale;
      }
    }
  }
}

}  // namespace ninfer
