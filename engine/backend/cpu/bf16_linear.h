// Owns the CPU linear with activations rounded to bf16 (CpuBackendOptions::bf16_activations, bf16 weights only):
// the rounded activation rows and the AVX512-BF16 kernel that multiplies them with vdpbf16ps.
#pragma once

#include <cstdint>

#include "engine/backend/cpu/aligned_vector.h"

namespace ninfer::cpu {

// Activation rows rounded to bf16 (round to nearest even, as f32_to_bf16), row r at r · stride elements; the
// elements from K to stride (a multiple of 32) are zero.
struct Bf16Rows {
  AlignedVector<uint16_t> storage;
  int64_t K = 0, stride = 0;
  const uint16_t* row(int64_t r) const { return storage.data() + r * stride; }
};
// Sizes `out` for M rows of K (the padding zeroed).
void bf16_size_rows(int64_t M, int64_t K, Bf16Rows& out);

// Most activation rows one kernel call handles (the caller loops over row tiles).
constexpr int kBf16MaxRows = 4;

// y[m · ys + n] = (acc ? y : 0) + Σ_k a[m0 + m][k] · w[n · ws + k] for m < rows (≤ kBf16MaxRows), n in [n0, n1).
// Each (m, n) has one 16-lane f32 accumulator that vdpbf16ps advances 32 k at a time (the last step's weights
// loaded under a mask), summed at the end by _mm512_reduce_add_ps: an output has the same bits whichever rows
// and weight rows share the call. vdpbf16ps adds each lane's two exact products one after the other, rounding
// each sum, with denormal inputs and results flushed to zero (Intel SDM).
using Bf16DotFn = void (*)(const Bf16Rows& a, int64_t m0, int rows, const uint16_t* w, int64_t ws, int64_t n0,
                           int64_t n1, float* y, int64_t ys, bool acc);
// nullptr when the build or the CPU lacks AVX-512 F/BW/VL with BF16.
Bf16DotFn bf16_dot_avx512();

}  // namespace ninfer::cpu
