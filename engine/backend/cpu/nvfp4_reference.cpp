// The NVFP4 linear's reference numerics (docs/nvfp4.md "Compute"): weight view, activation quantizer, scalar dots,
// and the prepared activation layouts the SIMD kernels read.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/artifact/dtype.h"
#include "engine/backend/checks/linear_checks.h"
#include "engine/backend/cpu/nvfp4_linear.h"
#include "engine/core/error.h"
#include "engine/quant/nvfp4.h"

namespace ninfer::cpu {

namespace {

// Dequantization table of dequantize_nvfp4 (code 0x8 is +0).
constexpr std::array<float, 16> kE2M1 = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                         0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
// 2·e2m1 as integers.
constexpr std::array<int, 16> kE2M1x2 = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> t = [] {
    std::array<float, 256> v{};
    for (int i = 0; i < 256; ++i) v[static_cast<size_t>(i)] = e4m3_decode(static_cast<uint8_t>(i));
    return v;
  }();
  return t;
}

}  // namespace

Nvfp4Weight nvfp4_weight(const char* op, const Tensor& w) {
  check_nvfp4_weight_on(op, w, Device::kCpu);
  const int64_t N = w.dim(0), K = w.dim(1);
  const std::array<int64_t, 2> shape = {N, K};
  const Nvfp4Layout layout = *nvfp4_layout(shape);
  Nvfp4Weight v;
  v.codes = static_cast<const uint8_t*>(w.data);
  v.scales = v.codes + layout.scales_offset;
  std::memcpy(&v.weight_scale_2, v.codes + layout.tensor_scale_offset, sizeof(float));
  std::memcpy(&v.input_scale, v.codes + layout.tensor_scale_offset + 4, sizeof(float));
  if (!std::isfinite(v.weight_scale_2) || v.weight_scale_2 < 0.0f || !std::isfinite(v.input_scale) ||
      v.input_scale < 0.0f)
    fail(ErrorKind::kInvalidArgument, "{}: nvfp4 weight {} has weight_scale_2 {} / input_scale {} (must be finite, >= 0)",
         op, w.describe(), v.weight_scale_2, v.input_scale);
  v.N = N;
  v.K = K;
  return v;
}

float nvfp4_quantize_row(const float* x, int64_t K, float input_scale, uint8_t* codes, uint8_t* scales) {
  float amax = 0.0f;
  bool finite = true;
  for (int64_t k = 0; k < K; ++k) {
    finite = finite && std::isfinite(x[k]);
    amax = std::max(amax, std::fabs(x[k]));
  }
  const int64_t blocks = K / static_cast<int64_t>(kNvfp4BlockSize);
  if (!finite) {
    std::memset(codes, 0, static_cast<size_t>(K / 2));
    std::memset(scales, e4m3_encode(1.0f), static_cast<size_t>(blocks));
    return std::numeric_limits<float>::quiet_NaN();
  }
  const float g = input_scale > 0.0f ? input_scale : nvfp4_weight_scale_2(amax);
  if (g == 0.0f) {  // dynamic and all zero: quantize_nvfp4's all-zero tensor
    std::memset(codes, 0, static_cast<size_t>(K / 2));
    std::memset(scales, e4m3_encode(1.0f), static_cast<size_t>(blocks));
    return 0.0f;
  }
  const float six_g = kE2M1Max * g;
  for (int64_t b = 0; b < blocks; ++b) {
    const float* block = x + b * 16;
    float block_amax = 0.0f;
    for (int i = 0; i < 16; ++i) block_amax = std::max(block_amax, std::fabs(block[i]));
    float s = block_amax / six_g;
    if (s == 0.0f) s = 1.0f;
    s = std::clamp(s, kE4M3MinScale, kE4M3Max);
    const uint8_t sc = e4m3_encode(s);
    scales[b] = sc;
    const float denominator = e4m3_decode(sc) * g;
    for (int i = 0; i < 16; i += 2) {
      const uint8_t lo = e2m1_encode(block[i] / denominator);
      const uint8_t hi = e2m1_encode(block[i + 1] / denominator);
      codes[b * 8 + i / 2] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
  return g;
}

float nvfp4_w4a16_tail(const Nvfp4Weight& w, int64_t n, const float* x, int64_t k0) {
  const auto& e4m3 = e4m3_table();
  const uint8_t* codes = w.codes + n * (w.K / 2);
  const uint8_t* scales = w.scales + n * (w.K / 16);
  float s = 0.0f;
  for (int64_t k = k0; k < w.K; k += 2) {
    const float bs = e4m3[scales[k / 16]] * w.weight_scale_2;
    const uint8_t c = codes[k / 2];
    s += x[k] * (kE2M1[c & 0x0F] * bs);
    s += x[k + 1] * (kE2M1[c >> 4] * bs);
  }
  return s;
}

float nvfp4_dot_w4a16_ref(const Nvfp4Weight& w, int64_t n, const float* x) { return nvfp4_w4a16_tail(w, n, x, 0); }

float nvfp4_w4a4_blocks(const Nvfp4Weight& w, int64_t n, const uint8_t* a_codes, const uint8_t* a_scales, int64_t b0,
                        int64_t b1) {
  const auto& e4m3 = e4m3_table();
  const uint8_t* codes = w.codes + n * (w.K / 2);
  const uint8_t* scales = w.scales + n * (w.K / 16);
  float acc = 0.0f;
  for (int64_t b = b0; b < b1; ++b) {
    int dot = 0;
    for (int64_t j = b * 8; j < b * 8 + 8; ++j) {
      dot += kE2M1x2[a_codes[j] & 0x0F] * kE2M1x2[codes[j] & 0x0F];
      dot += kE2M1x2[a_codes[j] >> 4] * kE2M1x2[codes[j] >> 4];
    }
    acc += static_cast<float>(dot) * (e4m3[a_scales[b]] * e4m3[scales[b]]);
  }
  return acc;
}

float nvfp4_dot_w4a4_ref(const Nvfp4Weight& w, int64_t n, const uint8_t* a_codes, const uint8_t* a_scales,
                         float a_global) {
  return nvfp4_w4a4_blocks(w, n, a_codes, a_scales, 0, w.K / 16) * ((a_global * w.weight_scale_2) * 0.25f);
}

void nvfp4_size_a4(int64_t M, int64_t K, Nvfp4A4Rows& out) {
  out.K = K;
  // mag/sgn (2K bytes), K/8 + 1 floats, raw codes K/2 and scales K/16; rounded to 64 bytes.
  out.blocked = (2 * K + 4 * (K / 8 + 1) + K / 2 + K / 16 + 63) / 64 * 64;
  out.lanes = out.blocked + (K / 2 + K / 2 + 4 * (K / 8) + 63) / 64 * 64;  // + s8 values, int32 corrections
  out.row_bytes = out.lanes + K / 256 * Nvfp4A4Rows::kNvfp4LaneChunkBytes;     // + the AVX-512 lane form
  const size_t need = static_cast<size_t>(M * out.row_bytes);
  if (out.storage.size() < need) resize_exact(out.storage, need);
}

void nvfp4_prepare_a4(const float* x, int64_t xs, int64_t r0, int64_t r1, float input_scale, Nvfp4A4Rows& out) {
  const int64_t K = out.K;
  for (int64_t r = r0; r < r1; ++r) {
    auto* row = const_cast<uint8_t*>(out.row(r));
    auto* codes = const_cast<uint8_t*>(out.codes(r));
    auto* scales = const_cast<uint8_t*>(out.scales(r));
    const float g = nvfp4_quantize_row(x + r * xs, K, input_scale, codes, scales);
    uint8_t* mag_lo = row;
    uint8_t* mag_hi = row + K / 2;
    uint8_t* sgn_lo = row + K;
    uint8_t* sgn_hi = row + 3 * K / 2;
    auto* val_lo = const_cast<int8_t*>(out.val_lo(r));
    auto* val_hi = const_cast<int8_t*>(out.val_hi(r));
    for (int64_t j = 0; j < K / 2; ++j) {
      const uint8_t c = codes[j];
      mag_lo[j] = static_cast<uint8_t>(kE2M1x2[c & 0x07]);
      mag_hi[j] = static_cast<uint8_t>(kE2M1x2[(c >> 4) & 0x07]);
      sgn_lo[j] = c & 0x08;
      sgn_hi[j] = (c >> 4) & 0x08;
      val_lo[j] = static_cast<int8_t>(kE2M1x2[c & 0x0F]);
      val_hi[j] = static_cast<int8_t>(kE2M1x2[c >> 4]);
    }
    auto* corr = const_cast<int32_t*>(out.corr(r));
    for (int64_t h = 0; h < K / 8; ++h) {  // half block h: even and odd elements 4h..4h+3 of the lo / hi arrays
      int s = 0;
      for (int64_t j = 4 * h; j < 4 * h + 4; ++j) s += val_lo[j] + val_hi[j];
      corr[h] = 12 * s;
    }
    auto* sdup = reinterpret_cast<float*>(row + 2 * K);
    const auto& e4m3 = e4m3_table();
    for (int64_t b = 0; b < K / 16; ++b) sdup[2 * b] = sdup[2 * b + 1] = e4m3[scales[b]];
    sdup[K / 8] = g;
    nvfp4_write_lanes(out, r);
  }
}

void nvfp4_write_lanes(Nvfp4A4Rows& out, int64_t r) {
  const int8_t* val_lo = out.val_lo(r);
  const int8_t* val_hi = out.val_hi(r);
  const int32_t* corr = out.corr(r);
  const float* sdup = out.scale_dup(r);
  for (int64_t c = 0; c < out.K / 256; ++c) {
    auto* dst = const_cast<uint8_t*>(out.lane_chunk(r, c));
    for (int64_t b = 0; b < 16; ++b) {
      const int64_t j = 128 * c + 8 * b;  // block b's first value byte in val_lo / val_hi
      for (int64_t i = 0; i < 4; ++i) {
        dst[4 * b + i] = static_cast<uint8_t>(val_lo[j + i]);
        dst[64 + 4 * b + i] = static_cast<uint8_t>(val_hi[j + i]);
        dst[128 + 4 * b + i] = static_cast<uint8_t>(val_lo[j + 4 + i]);
        dst[192 + 4 * b + i] = static_cast<uint8_t>(val_hi[j + 4 + i]);
      }
      const int32_t neg = -(corr[32 * c + 2 * b] + corr[32 * c + 2 * b + 1]);
      const float sa = sdup[32 * c + 2 * b] * 0x1p64f;
      std::memcpy(dst + 256 + 4 * b, &neg, 4);
      std::memcpy(dst + 320 + 4 * b, &sa, 4);
    }
  }
}

void nvfp4_prepare_a16(const float* x, int64_t xs, int64_t r0, int64_t r1, int64_t K, float* out) {
  const int64_t K256 = K / 256 * 256;
  for (int64_t r = r0; r < r1; ++r) {
    const float* src = x + r * xs;
    float* dst = out + r * K;
    for (int64_t g = 0; g < K256; g += 32) {
      for (int j = 0; j < 16; ++j) {
        dst[g + j] = src[g + 2 * j];
        dst[g + 16 + j] = src[g + 2 * j + 1];
      }
    }
    std::memcpy(dst + K256, src + K256, static_cast<size_t>(K - K256) * sizeof(float));
  }
}

}  // namespace ninfer::cpu
