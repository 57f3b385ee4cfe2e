// Owns the device-side NVFP4 element codecs: E2M1 and E4M3 encode/decode bit-identical to engine/quant/nvfp4.cpp,
// and the packed-nibble expansions the NVFP4 kernels use (8 codes → 2·e2m1 as int8 for dp4a, one code → f32).
//
// Usage:
//   - `e2m1_encode(x)` / `e4m3_encode(x)` / `e4m3_decode(c)`: the CPU codecs' exact rules (ties to even, NaN codes,
//     saturation, subnormal E4M3 scales). Needs denormals kept (no -ftz / fast math), as every ninfer CUDA build has.
//   - `e2m1x8_to_i8x2(q, lo, hi)`: the 8 codes of a little-endian word (code j in bits 4j..4j+3) as 2·e2m1 signed
//     bytes, codes 0..3 in `lo`, 4..7 in `hi` (byte i = code i): the operands of __dp4a. Both operands of a dot must
//     be expanded the same way; the product sum of two expansions is the exact integer Σ (2·e2m1(a))·(2·e2m1(w)).
//   - `e2m1_to_f32(c)`: e2m1(c) as f32 exactly (code 0x8 gives −0, which adds like +0).
#pragma once

#include <cstdint>

namespace ninfer::kern {

__device__ __forceinline__ uint8_t e2m1_encode(float x) {
  const float a = fabsf(x);
  uint32_t index;
  // Round to nearest even: ties at 0.25, 1.25, 2.5, 5 go down, at 0.75, 1.75, 3.5 up. NaN lands on 7.
  if (a <= 0.25f) index = 0;
  else if (a < 0.75f) index = 1;
  else if (a <= 1.25f) index = 2;
  else if (a < 1.75f) index = 3;
  else if (a <= 2.5f) index = 4;
  else if (a < 3.5f) index = 5;
  else if (a <= 5.0f) index = 6;
  else index = 7;
  return static_cast<uint8_t>((x < 0.0f ? 0x8u : 0x0u) | index);
}

__device__ __forceinline__ float e4m3_decode(uint32_t code) {
  const uint32_t mag = code & 0x7Fu;
  if (mag == 0x7Fu) return __uint_as_float(0x7FC00000u);
  // The 7 magnitude bits placed at the top of an f32's exponent/mantissa, times 2^120: exact for normals and for
  // the subnormals (an f32 denormal times a power of two).
  const float v = __fmul_rn(__uint_as_float(mag << 20), 0x1p120f);
  return (code & 0x80u) ? -v : v;
}

__device__ __forceinline__ uint8_t e4m3_encode(float x) {
  if (isnan(x)) return 0x7F;
  const uint32_t sign = (__float_as_uint(x) >> 31) ? 0x80u : 0x00u;
  const float a = fabsf(x);
  if (a >= 448.0f) return static_cast<uint8_t>(sign | 0x7Eu);
  if (a < 1.0f / 64.0f) {  // subnormal range: a multiple of 2^-9, ties to even
    const float q = rintf(__fmul_rn(a, 512.0f));
    return static_cast<uint8_t>(sign | static_cast<uint32_t>(q));
  }
  uint32_t bits = __float_as_uint(a);
  bits += 0x7FFFFu + ((bits >> 20) & 1u);
  uint32_t code = (bits >> 20) - ((127u - 7u) << 3);
  code = code < 0x7Eu ? code : 0x7Eu;
  return static_cast<uint8_t>(sign | code);
}

__device__ __forceinline__ void e2m1x8_to_i8x2(uint32_t q, int& lo, int& hi) {
  constexpr uint32_t kPos0 = 0x03020100u, kPos1 = 0x0C080604u;  // {0, 1, 2, 3}, {4, 6, 8, 12}
  constexpr uint32_t kNeg0 = 0xFDFEFF00u, kNeg1 = 0xF4F8FAFCu;  // {0, -1, -2, -3}, {-4, -6, -8, -12}
  const uint32_t mag = q & 0x77777777u;          // selectors 0..7 (bit 3 of a selector would mean sign replication)
  const uint32_t neg = (q >> 1) & 0x44444444u;  // +4 on the selector of a negative code: take the negative table
  const uint32_t mag_hi = mag >> 16, neg_hi = neg >> 16;
  const uint32_t p0 = __byte_perm(kPos0, kPos1, mag), n0 = __byte_perm(kNeg0, kNeg1, mag);
  const uint32_t p1 = __byte_perm(kPos0, kPos1, mag_hi), n1 = __byte_perm(kNeg0, kNeg1, mag_hi);
  lo = static_cast<int>(__byte_perm(p0, n0, 0x3210u | (neg & 0xFFFFu)));
  hi = static_cast<int>(__byte_perm(p1, n1, 0x3210u | (neg_hi & 0xFFFFu)));
}

__device__ __forceinline__ float e2m1_to_f32(uint32_t code) {
  // Magnitude index i at bits 22..24 is the f32 i·2^-127 pattern of e2m1 (0, 0.5, 1, 1.5, 2, 3, 4, 6) · 2^-126.
  const uint32_t bits = ((code & 0x7u) << 22) | ((code & 0x8u) << 28);
  return __fmul_rn(__uint_as_float(bits), 0x1p126f);
}

}  // namespace ninfer::kern
