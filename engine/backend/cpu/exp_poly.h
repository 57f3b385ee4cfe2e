// Owns the constants of the CPU kernels' vector exp for x ≤ 0 (exp_shift, silu_mul): one set for the AVX2 and AVX-512
// kernels, which take every lane through the same operations with them and so give the same bits.
#pragma once

namespace ninfer::cpu::exp_poly {

// exp(x) = 2^k · exp(r), k = round(x · log2 e), r = x − k·ln 2 with ln 2 split in two so the reduction is exact; exp(r)
// by its degree-7 Taylor polynomial (truncation < 1e-8 relative on [−ln2/2, ln2/2]); below kUnderflow the result is 0.
inline constexpr float kUnderflow = -87.3f;
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
// Horner's coefficients, highest degree first: y = c0; y = y·r + c_i for i = 1…7.
inline constexpr float kCoeffs[8] = {1.0f / 5040.0f, 1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f,
                                     1.0f / 6.0f,    0.5f,           1.0f,           1.0f};

}  // namespace ninfer::cpu::exp_poly
