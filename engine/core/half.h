// Owns the 16-bit float conversions (bf16, IEEE f16 <-> f32), scalar and bulk, used by packing and the CPU backend.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace ninfer {

// bf16 -> f32 is exact: the bf16 bits are the top half of the f32.
inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

// f32 -> bf16, round to nearest even; NaN stays a (quiet) NaN, infinities stay infinite.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

// IEEE 754 binary16 -> f32, exact for every input (subnormals, infinities, NaN payloads).
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    u = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    u = sign;
  } else {  // subnormal: normalise
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    u = sign | (uint32_t(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(u);
}

// f32 -> IEEE binary16, round to nearest even; overflow gives ±inf, tiny values become subnormal or ±0.
inline uint16_t f32_to_f16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs >= 0x38800000u) {                                  // normal f16 range (>= 2^-14)
    uint32_t v = abs - 0x38000000u;                          // rebias exponent 127 -> 15
    v += 0xfffu + ((v >> 13) & 1u);
    return uint16_t(sign | (v >> 13));
  }
  if (abs < 0x33000000u) return sign;  // < 2^-25: rounds to zero
  // subnormal f16: value = mant * 2^-24
  const uint32_t exp = abs >> 23;
  const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exp;  // 14..24 for exponents 102..112
  uint32_t v = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (v & 1u))) ++v;
  return uint16_t(sign | v);
}

inline void bf16_to_f32(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}
inline void f16_to_f32(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}
inline void f32_to_bf16(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}
inline void f32_to_f16(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

}  // namespace ninfer
