// Owns the CPU backend's inner-loop kernel table (scalar, AVX2/FMA/F16C and AVX-512 variants) and its runtime selection.
#pragma once

#include <cstdint>

#include "engine/artifact/dtype.h"

namespace ninfer::cpu {

// Largest number of activation rows one gemm kernel call handles (the caller loops over row blocks).
constexpr int kGemmMaxRows = 8;

// y[m * ys + n] = (acc ? y : 0) + Σ_k x[m * xs + k] · w[n * ws + k]   for m < rows (≤ kGemmMaxRows), n in [n0, n1).
// `w` points at element 0 of the weight matrix, stored as W (f32, or bf16/f16 bit patterns). `packed`: these rows
// as the table's gemm_pack wrote them (its block for this row block), or nullptr: the kernel reads x, packing it
// itself where it packs. The result does not depend on which.
using GemmFn = void (*)(const float* x, int64_t xs, int rows, const float* packed, const void* w, int64_t ws,
                        int64_t n0, int64_t n1, int64_t K, float* y, int64_t ys, bool acc);
// Packs rows [0, M) of x (row stride xs) once per linear call for GemmFn's `packed`: the block of rows
// [b·kGemmMaxRows, ...) at out + b · gemm_pack_block(K) floats.
using GemmPackFn = void (*)(const float* x, int64_t xs, int64_t M, int64_t K, float* out);
inline int64_t gemm_pack_block(int64_t K) { return kGemmMaxRows * (K / 8 * 8); }

// c[m * cs + n] = (acc ? c : 0) + Σ_k a[m * as + k] · b[k * bs + n]   for m < M, n < N: C = A·B with every matrix
// row-major (B's rows are k, unlike GemmFn's weight rows). Small in-cache products (the chunked delta rule); each
// output sums its K products in k order.
using GemmNnFn = void (*)(const float* a, int64_t as, const float* b, int64_t bs, float* c, int64_t cs, int64_t M,
                          int64_t N, int64_t K, bool acc);

struct Kernels {
  const char* name;
  GemmFn gemm_f32;
  GemmFn gemm_bf16;
  GemmFn gemm_f16;
  float (*dot)(const float* a, const float* b, int64_t n);             // Σ a·b
  void (*axpy)(float a, const float* x, float* y, int64_t n);          // y += a·x
  void (*scale)(float a, float* y, int64_t n);                         // y *= a
  void (*to_f32)(const void* src, DType dtype, float* dst, int64_t n);  // f32/bf16/f16 -> f32
  void (*from_f32)(const float* src, DType dtype, void* dst, int64_t n);  // f32 -> f32/bf16/f16 (RNE)
  GemmNnFn gemm_nn;
  // p[i] = exp(x[i] − m) for i < n (p may be x), returns Σ p. The softmax step of attention: x ≤ m, so every
  // p is in [0, 1]. The AVX2 variant is a polynomial exp within a few ulp of std::exp (tests/backend/cpu_kernels_test.cpp).
  float (*exp_shift)(const float* x, float m, float* p, int64_t n);
  GemmPackFn gemm_pack;  // nullptr where the gemm kernels read x directly (scalar)
  // y[i] = silu(g[i]) · u[i] (u == nullptr: y[i] = silu(g[i])), silu(x) = x / (1 + exp(−x)); y may be g or u. The AVX2
  // variant takes exp(−|x|) by the polynomial of exp_shift, within a few ulp of std::exp (cpu_kernels_test.cpp).
  void (*silu_mul)(const float* g, const float* u, float* y, int64_t n);
  // dst[c * ds + r] = src[r * ss + c] as f32 for r < rows, c < cols (src f32/bf16/f16): a K block turned into Kᵀ for
  // attention's scores (exact: widening only).
  void (*transpose_to_f32)(const void* src, DType dtype, int64_t ss, int64_t rows, int64_t cols, float* dst,
                           int64_t ds);
  // One token of the gated delta rule on a value head's state S [dk, dv] (row i: key dimension i), the recurrent
  // decode step, in two passes over S instead of four: with sk = Sᵀk and sq = Sᵀq of the old state,
  // u = beta·(v − decay·sk), o = decay·sq + (k·q)·u (which is Sᵀq of the new state), then S ← decay·S + k·uᵀ.
  // Algebraically the textbook order (S ← decay·S; u = beta·(v − Sᵀk); S ← S + k·uᵀ; o = Sᵀq). `tmp`: 2·dv floats.
  void (*delta_step)(float* S, int64_t dk, int64_t dv, const float* k, const float* q, const float* v, float decay,
                     float beta, float* o, float* tmp);
  // dst[i] = src[i] for i < n, a copy nobody reads soon (GDN state checkpoints): the AVX2 variant stores around the
  // caches (non-temporal stores, no read of the destination's lines first) where dst is 32-byte aligned.
  void (*stream_copy)(float* dst, const float* src, int64_t n);

  GemmFn gemm(DType w) const;  // the variant for a weight dtype; nullptr when unsupported
};

const Kernels& scalar_kernels();
// nullptr when the build has no AVX2 variant (non-x86) or the CPU lacks AVX2, FMA or F16C.
const Kernels* avx2_kernels();
// The AVX2 table with 16-lane dense GEMM kernels (gemm_f32/bf16/f16, gemm_pack; kernels_avx512.cpp), which sum each
// output with one 16-lane accumulator where the AVX2 ones use 8: the two tables' GEMMs differ in the last bits.
// nullptr without a GCC/Clang x86-64 build, the AVX2 table, or the AVX-512 set of cpu_supports_avx512_vnni().
const Kernels* avx512_kernels();
// Runtime CPU checks (engine/backend/cpu/cpu_features.cpp, GCC/Clang builtins or MSVC CPUID): a SIMD table is used
// only when they hold.
bool cpu_supports_avx2_fma_f16c();
bool cpu_supports_avx512_vnni();  // AVX-512 F, BW, VL, VNNI, DQ and FMA
bool cpu_supports_avx512_vbmi();  // those and AVX-512 VBMI (vpermb)

}  // namespace ninfer::cpu
