// Owns the CPU NVFP4 linear's numerics: the packed weight view, the W4A4
// activation quantizer, the scalar reference dots, the prepared activation
// layouts and the SIMD kernel table.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/backend/cpu/aligned_vector.h"
#include "engine/backend/tensor.h"

namespace ninfer::cpu {

// One nvfp4 weight entry [N, K] (engine/artifact/dtype.h nvfp4_layout()):
// codes, E4M3 block scales, trailer.
struct Nvfp4Weight {
  const uint8_t *codes =
      nullptr; // [N, K/2], element 2j in the low nibble of byte j
  const uint8_t *scales = nullptr; // [N, K/16] E4M3
  float weight_scale_2 =
      0.0f; // dequantization multiplier (ModelOpt weight_scale_2)
  float input_scale = 0.0f; // the checkpoint's activation global scale; 0 =
                            // none (dynamic per row)
  int64_t N = 0, K = 0;
};
// Checks that w is a cpu nvfp4 [N, K] view of a whole entry (K % 16 == 0,
// contiguous rows, finite trailer) and returns the view. Throws
// Error(kInvalidArgument) naming `op`.
Nvfp4Weight nvfp4_weight(const char *op, const Tensor &w);

// ---- reference (docs/nvfp4.md "Compute"): the definition every kernel is
// tested against ----

// W4A4 activation quantizer for one row of K (a multiple of 16) values. Global
// scale g = input_scale when > 0, else max|x| / 2688; then ModelOpt's block
// recipe with g in the place of weight_scale_2 (bit-identical to
// quantize_nvfp4(x, 1, K, g) / quantize_nvfp4(x, 1, K)). Writes K/2 code bytes
// and K/16 E4M3 scales and returns g. A zero row (dynamic) gives g = 0,
// scales 1.0 and codes 0. A row with a NaN/Inf gives g = NaN (its outputs are
// NaN).
float nvfp4_quantize_row(const float *x, int64_t K, float input_scale,
                         uint8_t *codes, uint8_t *scales);

// W4A16: Σ_k x[k] · (e2m1(c) · (e4m3(s) · weight_scale_2)), the dequantized
// weight exactly as dequantize_nvfp4, summed in k order in f32.
float nvfp4_dot_w4a16_ref(const Nvfp4Weight &w, int64_t n, const float *x);
// W4A4: per block b, I_b = Σ (2·e2m1(a))·(2·e2m1(w)) (an exact integer), t_b =
// I_b · (e4m3(sa_b) · e4m3(sw_b)) (exact in f32); acc = Σ_b t_b in block order
// in f32; result = acc · ((g · weight_scale_2) · 0.25).
float nvfp4_dot_w4a4_ref(const Nvfp4Weight &w, int64_t n,
                         const uint8_t *a_codes, const uint8_t *a_scales,
                         float a_global);

// ---- prepared activations, the SIMD kernels' input (built once per linear
// call) ----

// Most activation rows one kernel call handles (the caller loops over row
// tiles); the AVX-512 lane kernel takes up to kNvfp4LaneMaxRows W4A4 rows.
constexpr int kNvfp4MaxRows = 4;
constexpr int kNvfp4LaneMaxRows = 8;
// Software prefetch (prefetcht1, into L2) distance of the kernels in the packed
// code stream (the scale stream: 1/8 of it), as the dense GEMV's
// (kernels_avx2.cpp): 1 KiB ahead was ~100 ns of one core's streaming, under
// the memory latency.
constexpr int64_t kNvfp4PrefetchAhead = 8192;

// W4A4 row r lives at base + r * row_bytes: magnitudes |2·e2m1| as u8 of the
// even elements (K/2 bytes, "lo"), of the odd elements (K/2, "hi"), sign bits
// 0x08 of the even and odd elements (K/2 each), then K/8 floats: e4m3(sa_b) for
// block b at lanes 2b and 2b+1, then the global scale g; then the raw codes and
// scales; then, at the 64-byte boundary `blocked`, the blocked kernels' form:
// signed 2·e2m1 as s8 of the even (K/2) and odd (K/2) elements and K/8 int32
// offset corrections, 12 · Σ of the 8 values of each half block h (elements
// 8h..8h+7); then, at the 64-byte boundary `lanes`, the AVX-512 kernel's
// one-lane-per-block form (written by its table's prepare_a4 only): per
// 256-element chunk c, kNvfp4LaneChunkBytes at lanes + c · kNvfp4LaneChunkBytes.
struct Nvfp4A4Rows {
  AlignedVector<uint8_t> storage; // row r at r · row_bytes, a multiple of 64:
                                  // every row starts on a cache line
  int64_t K = 0, row_bytes = 0, blocked = 0, lanes = 0;
  const uint8_t *row(int64_t r) const { return storage.data() + r * row_bytes; }
  const uint8_t *mag_lo(int64_t r) const { return row(r); }
  const uint8_t *mag_hi(int64_t r) const { return row(r) + K / 2; }
  const uint8_t *sgn_lo(int64_t r) const { return row(r) + K; }
  const uint8_t *sgn_hi(int64_t r) const { return row(r) + 3 * K / 2; }
  const float *scale_dup(int64_t r) const {
    return reinterpret_cast<const float *>(row(r) + 2 * K);
  }
  float global(int64_t r) const { return scale_dup(r)[K / 8]; }
  // Raw quantized form (for the tails the kernels hand to the reference): codes
  // [K/2] and scales [K/16].
  const uint8_t *codes(int64_t r) const {
    return row(r) + 2 * K + 4 * (K / 8 + 1);
  }
  const uint8_t *scales(int64_t r) const { return codes(r) + K / 2; }
  const int8_t *val_lo(int64_t r) const {
    return reinterpret_cast<const int8_t *>(row(r) + blocked);
  }
  const int8_t *val_hi(int64_t r) const { return val_lo(r) + K / 2; }
  const int32_t *corr(int64_t r) const {
    return reinterpret_cast<const int32_t *>(row(r) + blocked + K);
  }
  // Chunk c of row r's lane form (nvfp4_avx512.cpp, write_lanes): 4 × 64 s8
  // values, 16 int32 −12·Σ per block, 16 f32 e4m3(sa_b) · 2^64.
  const uint8_t *lane_chunk(int64_t r, int64_t c) const {
    return row(r) + lanes + c * kNvfp4LaneChunkBytes;
  }
  static constexpr int64_t kNvfp4LaneChunkBytes = 384;
};
// Quantizes rows [r0, r1) of x (row stride xs floats) into `out`, which must
// already be sized for M rows.
void nvfp4_prepare_a4(const float *x, int64_t xs, int64_t r0, int64_t r1,
                      float input_scale, Nvfp4A4Rows &out);
void nvfp4_size_a4(int64_t M, int64_t K, Nvfp4A4Rows &out);
// Row r's lane form (the AVX-512 lane kernel's input) from its blocked form and
// scales, in scalar code: per 256-element chunk, block b's s8 values at lane b
// of four 64-byte vectors (its values 0, 2, 4, 6 | 1, 3, 5, 7 | 8, 10, 12, 14 |
// 9, 11, 13, 15), then −12 · Σ of its values (int32) and e4m3(sa_b) · 2^64
// (f32) at lane b. nvfp4_prepare_a4 calls it; the AVX-512 table's prepare_a4
// writes the same bytes.
void nvfp4_write_lanes(Nvfp4A4Rows &out, int64_t r);

// W4A16 rows: x reordered in groups of 32 as [16 even elements | 16 odd
// elements], row r at base + r * K.
void nvfp4_prepare_a16(const float *x, int64_t xs, int64_t r0, int64_t r1,
                       int64_t K, float *out);

// y[m * ys + n] = (acc ? y : 0) + dot(row m0 + m, weight row n), m < rows (≤
// w4a4_max_rows or kNvfp4MaxRows), n in [n0, n1). prepare_a4 is nvfp4_prepare_a4 (same
// signature), byte-identical output (the AVX2 table's leaves the lane form,
// which only the AVX-512 kernel reads, unwritten).
struct Nvfp4Kernels {
  const char *name;
  void (*w4a4)(const Nvfp4Weight &w, const Nvfp4A4Rows &a, int64_t m0, int rows,
               int64_t n0, int64_t n1, float *y, int64_t ys, bool acc);
  void (*w4a16)(const Nvfp4Weight &w, const float *xp, int rows, int64_t n0,
                int64_t n1, float *y, int64_t ys, bool acc);
  void (*prepare_a4)(const float *x, int64_t xs, int64_t r0, int64_t r1,
                     float input_scale, Nvfp4A4Rows &out);
  // Most activation rows one w4a4 call takes (w4a16: kNvfp4MaxRows).
  int w4a4_max_rows = kNvfp4MaxRows;
};
// nullptr when the build or CPU lacks the instruction set (AVX-512
// F/BW/VL/VNNI; AVX2/FMA).
const Nvfp4Kernels *nvfp4_avx512_kernels();
// The AVX-512 table with the lane kernel's nibble lookups in VBMI's vpermb (one
// instruction where vpshufb needs a mask and a shuffle): the same bits as
// nvfp4_avx512_kernels(), ~5-15% faster; nullptr without AVX-512 VBMI. The
// backend's pick where the CPU has it.
const Nvfp4Kernels *nvfp4_avx512_vbmi_kernels();
// Its W4A4 entry (nvfp4_avx512_vbmi.cpp); call only through that table.
void nvfp4_w4a4_lanes_vbmi(const Nvfp4Weight &w, const Nvfp4A4Rows &a,
                           int64_t m0, int rows, int64_t n0, int64_t n1,
                           float *y, int64_t ys, bool acc);
// The AVX-512 table with its 4 x 1 W4A4 kernel for every row count (the form
// before the lane kernel, which sums in another order), for tests and
// before/after benches (CpuBackendOptions::legacy_gemm); nullptr where
// nvfp4_avx512_kernels() is.
const Nvfp4Kernels *nvfp4_avx512_4x1_kernels();
const Nvfp4Kernels *nvfp4_avx2_kernels();
// The AVX2 table as it was before the register-blocked W4A4 kernel (the 4 x 1
// tile below), for before/after benches (CpuBackendOptions::legacy_gemm);
// nullptr where nvfp4_avx2_kernels() is.
const Nvfp4Kernels *nvfp4_avx2_4x1_kernels();
// The AVX2 W4A4 kernels, bit-identical to each other; call only where
// nvfp4_avx2_kernels() is non-null. 4x1: 4 activation rows x 1 weight row, the
// activation signs folded into each weight lookup (nvfp4_avx2.cpp).
void nvfp4_w4a4_avx2_4x1(const Nvfp4Weight &w, const Nvfp4A4Rows &a, int64_t m0,
                         int rows, int64_t n0, int64_t n1, float *y, int64_t ys,
                         bool acc);
// blocked: each weight chunk decoded once and reused over the 2-4 rows
// (nvfp4_w4a4_avx2.cpp); rows == 1 runs 4x1.
void nvfp4_w4a4_blocked_avx2(const Nvfp4Weight &w, const Nvfp4A4Rows &a,
                             int64_t m0, int rows, int64_t n0, int64_t n1,
                             float *y, int64_t ys, bool acc);
// The AVX2 activation quantizer of both tables (nvfp4_avx2.cpp); call only
// where nvfp4_avx2_kernels() is non-null.
void nvfp4_prepare_a4_avx2(const float *x, int64_t xs, int64_t r0, int64_t r1,
                           float input_scale, Nvfp4A4Rows &out);

// Tail helpers shared by the kernels: the reference's per-block terms for
// blocks [b0, b1) of weight row n.
float nvfp4_w4a4_blocks(const Nvfp4Weight &w, int64_t n, const uint8_t *a_codes,
                        const uint8_t *a_scales, int64_t b0, int64_t b1);
// Σ over k in [k0, K) of x[k] · dequantized w[n, k], x in natural order.
float nvfp4_w4a16_tail(const Nvfp4Weight &w, int64_t n, const float *x,
                       int64_t k0);

} // namespace ninfer::cpu
