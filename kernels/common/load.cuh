// Owns the device-side element types and conversions: f32/bf16/f16 → float loads (scalar and vectorized), float →
// bf16/f16 stores rounded to nearest even (bit-identical to engine/core/half.h), and the host-side dispatch from a
// runtime KType to the element type a kernel template is instantiated for.
//
// Usage:
//   - Element types: `float`, `kern::Bf16`, `kern::F16` (16-bit storage structs; no cuda_fp16.h / cuda_bf16.h types
//     in kernel signatures, so bf16 kernels build for sm_70, which has no bf16 arithmetic).
//   - `to_float(v)` widens one element; `from_float<T>(f)` narrows (RNE; NaN stays NaN, overflow → ±inf as the CPU).
//   - `load_vec<N>(p, out)` / `store_vec<N>(p, in)`: N consecutive elements at p as ONE aligned access of
//     N·sizeof(T) bytes (4, 8 or 16; larger N is split into 16-byte pieces). p must be aligned to that access size:
//     use them only when the row pointer and the element index are multiples of N (check `aligned_for<T, N>`).
//   - `rows_vectorizable(rows, vec)` (host): whether every row of a Rows view may be read with load_vec<vec> at
//     element indices that are multiples of vec (n, every leading stride and the base pointer fit), so a launcher
//     can pick a vectorized kernel instance or fall back to vec = 1.
//   - `visit_float_type(ktype, f)` (host, in launchers): calls f(T{}) with T = float / Bf16 / F16 for kF32/kBF16/kF16 and
//     returns false for any other KType, e.g.
//       visit_float_type(w.type, [&](auto tag) { my_kernel<decltype(tag)><<<g, b, 0, s>>>(...); });
#pragma once

#include <cstdint>

#include "kernels/common/kview.h"

namespace ninfer::kern {

struct Bf16 {
  uint16_t bits;
};
struct F16 {
  uint16_t bits;
};
static_assert(sizeof(Bf16) == 2 && sizeof(F16) == 2, "16-bit storage types");

// ---- scalar conversions ----
__device__ __forceinline__ float to_float(float v) { return v; }
// bf16 → f32 is exact: the bf16 bits are the top half of the f32.
__device__ __forceinline__ float to_float(Bf16 v) { return __uint_as_float(static_cast<uint32_t>(v.bits) << 16); }
// f16 → f32 is exact for every finite value (cvt.f32.f16; sm_53+).
__device__ __forceinline__ float to_float(F16 v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
}

__device__ __forceinline__ uint16_t f32_to_bf16_bits(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN stays quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// The exact integer algorithm of engine/core/half.h's f32_to_f16 (so NaN payloads match too).
__device__ __forceinline__ uint16_t f32_to_f16_bits(float f) {
  const uint32_t u = __float_as_uint(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs >= 0x38800000u) {                                               // normal f16 range (>= 2^-14)
    uint32_t v = abs - 0x38000000u;
    v += 0xfffu + ((v >> 13) & 1u);
    return static_cast<uint16_t>(sign | (v >> 13));
  }
  if (abs < 0x33000000u) return sign;  // < 2^-25: rounds to zero
  const uint32_t exp = abs >> 23;
  const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exp;
  uint32_t v = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (v & 1u))) ++v;
  return static_cast<uint16_t>(sign | v);
}

template <typename T>
__device__ __forceinline__ T from_float(float f);
template <>
__device__ __forceinline__ float from_float<float>(float f) {
  return f;
}
template <>
__device__ __forceinline__ Bf16 from_float<Bf16>(float f) {
  return Bf16{f32_to_bf16_bits(f)};
}
template <>
__device__ __forceinline__ F16 from_float<F16>(float f) {
  return F16{f32_to_f16_bits(f)};
}

// ---- vectorized access ----
namespace detail {
template <int Bytes>
struct VecWord;
template <>
struct VecWord<2> {
  using type = uint16_t;
};
template <>
struct VecWord<4> {
  using type = uint32_t;
};
template <>
struct VecWord<8> {
  using type = uint2;
};
template <>
struct VecWord<16> {
  using type = uint4;
};
}  // namespace detail

// Whether p + i (elements) is aligned for load_vec<N>/store_vec<N> on T.
template <typename T, int N>
__host__ __device__ __forceinline__ bool aligned_for(const void* p) {
  constexpr int bytes = N * static_cast<int>(sizeof(T)) < 16 ? N * static_cast<int>(sizeof(T)) : 16;
  return (reinterpret_cast<uintptr_t>(p) % bytes) == 0;
}

// N consecutive elements of T at p → out[0..N). One access per 16 bytes (p aligned as aligned_for says).
template <int N, typename T>
__device__ __forceinline__ void load_vec(const T* p, float (&out)[N]) {
  constexpr int kBytes = N * static_cast<int>(sizeof(T));
  constexpr int kChunk = kBytes < 16 ? kBytes : 16;
  constexpr int kPer = kChunk / static_cast<int>(sizeof(T));
  static_assert(kBytes % kChunk == 0, "load_vec: N·sizeof(T) must be 2, 4, 8 or a multiple of 16 bytes");
  using Word = typename detail::VecWord<kChunk>::type;
#pragma unroll
  for (int c = 0; c < N / kPer; ++c) {
    const Word w = *reinterpret_cast<const Word*>(p + c * kPer);
    T e[kPer];
    memcpy(e, &w, sizeof(w));
#pragma unroll
    for (int i = 0; i < kPer; ++i) out[c * kPer + i] = to_float(e[i]);
  }
}

// in[0..N) → N consecutive elements of T at p, rounded as from_float<T>.
template <int N, typename T>
__device__ __forceinline__ void store_vec(T* p, const float (&in)[N]) {
  constexpr int kBytes = N * static_cast<int>(sizeof(T));
  constexpr int kChunk = kBytes < 16 ? kBytes : 16;
  constexpr int kPer = kChunk / static_cast<int>(sizeof(T));
  static_assert(kBytes % kChunk == 0, "store_vec: N·sizeof(T) must be 2, 4, 8 or a multiple of 16 bytes");
  using Word = typename detail::VecWord<kChunk>::type;
#pragma unroll
  for (int c = 0; c < N / kPer; ++c) {
    T e[kPer];
#pragma unroll
    for (int i = 0; i < kPer; ++i) e[i] = from_float<T>(in[c * kPer + i]);
    Word w;
    memcpy(&w, e, sizeof(w));
    *reinterpret_cast<Word*>(p + c * kPer) = w;
  }
}

// ---- host-side layout checks and runtime dtype → template ----
// Bytes of one element; 0 for kNvfp4 (not a whole number of bytes), as dtype_element_bytes.
__host__ __device__ constexpr int ktype_bytes(KType t) {
  return t == KType::kF32 || t == KType::kI32 ? 4
         : t == KType::kF16 || t == KType::kBF16 ? 2
         : t == KType::kNvfp4 ? 0 : 1;
}

inline bool rows_vectorizable(const Rows& r, int vec) {
  if (vec <= 1) return true;
  const int bytes = vec * ktype_bytes(r.type) < 16 ? vec * ktype_bytes(r.type) : 16;
  if (bytes == 0) return false;
  if (r.n % vec != 0 || reinterpret_cast<uintptr_t>(r.data) % static_cast<uintptr_t>(bytes) != 0) return false;
  for (int d = 0; d < r.nlead; ++d)
    if (r.lead[d] > 1 && r.lead_stride[d] % vec != 0) return false;
  return true;
}

template <typename F>
inline bool visit_float_type(KType type, F&& f) {
  switch (type) {
    case KType::kF32: f(float{}); return true;
    case KType::kBF16: f(Bf16{}); return true;
    case KType::kF16: f(F16{}); return true;
    default: return false;
  }
}

}  // namespace ninfer::kern
