// The streaming W4A4 decode kernels (W4a4Gemv::kStream): a GEMV for M <= 8 activation rows (decode, and the K + 1
// rows of a speculative verify) meant to run at HBM bandwidth, and an activation quantizer spread over several CTAs
// per row. Same numbers as the tiled kernels (nvfp4.cu): every per-block term is exact, only the f32 summation order
// differs; the quantizer writes the same bytes (nvfp4_quant.cuh).
//
// Why this shape (docs/cuda-backend.md, "Linear"). The tiled GEMV (gemv.cuh + w4a4_gemv_kernel) was instruction-issue
// bound on the H200 at a third of copy bandwidth: a lane's unit was one 16-block (an 8-byte code load and a 1-byte
// scale load per weight row) and every unit re-read its 16 activation bytes and scale from L1 for 2-4 weight rows.
// Here:
//   - A warp owns kStreamRows = 4 weight rows and its lanes walk K in chunks of 32 codes (two blocks): one 16-byte
//     code load and one 2-byte scale load per row and chunk, 512 contiguous bytes per warp and row (coalesced). The
//     loads of U chunks × 4 rows are issued before any arithmetic (U = 2 for M <= 2), ~4 KiB in flight per warp.
//     Weights are read with ld.global.cs (evict-first: they are used once) so L1 keeps the activations.
//   - A lane's activation chunk (32 int8 + 2 f32 scales per activation row, the quantizer's expanded layout) is read
//     once per chunk and used for all 4 weight rows (at M <= 2 half the tiled GEMV's L1 reads per weight byte, whose
//     units re-read 20 bytes per 2 rows).
//   - Code decode, the dominant cost at M = 1: for M <= 2 one PTX prmt per 4 codes against the magnitude table,
//     twice (positive codes' magnitudes; the selector's sign bit makes prmt write 0 for negative codes, and the
//     other way round after flipping the sign bits), 7 instructions per 8 codes instead of the signed expansion's
//     13, at the price of two dp4a chains per block (I_b = Σ|w|·a over positive w − Σ|w|·a over negative w). From
//     M = 4 the dp4a count dominates and the signed expansion (e2m1x8_to_i8x2's tables) is used.
//   - Integer → float without I2F (16 per clock and SM on sm_70…sm_90, f32 adds 64-128): each dp4a chain starts from
//     the bits of 1.5·2^23, so its result read as f32 is 1.5·2^23 + I exactly (|I| <= 2304); the magic is removed by
//     an exact f32 subtraction (of the other chain, for M <= 2).
//   - Scales: the weight's E4M3 byte is placed at an f32's exponent/mantissa (its value · 2^-120, exact also for
//     subnormal scales, which become f32 denormals; denormals are kept in every ninfer build), the activation scale
//     is multiplied by 2^119 (<= 448·2^119, finite), so their product is sa·sw/2, exact (8 significant bits, >= 2^-19),
//     and acc = fma(I_b, sa·sw/2, acc) rounds as acc + t_b/2 does: the sum of the halved exact terms, doubled
//     exactly at the end. As the CPU's SIMD paths, an E4M3 NaN scale code (which no quantizer writes) is not NaN.
//   - Per output, a warp butterfly; small N splits K across the warps of a CTA (summed in slice order in shared
//     memory), so the result is deterministic for a launch shape.
// Budget: 85% of the H200's copy bandwidth is ≈ 6.4e12 weight elements/s, ≈ 4.6 instructions per element and lane at
// full issue. The main loop's sm_90 SASS (nvcc 13) takes 2.1, 2.9, 4.4 and 6.5 for M = 1, 2, 4, 8 (dp4a and the
// per-block f32 work grow with M): M <= 2 should be memory-bound, M = 4 is at the issue limit and M = 8 above it;
// more needs the int8 tensor cores (sm_80+ mma), not in this kernel. sm_70: only dp4a, prmt, shuffles and plain loads
// (same source); a V100's 900 GB/s leaves ample issue slots.
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/common/reduce.cuh"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemv.cuh"
#include "kernels/gemm/nvfp4_gemv.h"
#include "kernels/gemm/nvfp4_quant.cuh"

namespace ninfer::kern {

namespace {

constexpr int kStreamWarps = 8;
constexpr int kStreamThreads = kStreamWarps * 32;
constexpr int kStreamRows = 4;  // weight rows per warp
// Chunks a lane loads before computing: 2 while the register tile is small (M <= 2), else 1 (no spills).
template <int MT>
constexpr int kStreamUnroll = MT <= 2 ? 2 : 1;
// CTAs per multiprocessor the launch bounds ask for: 2 (at most 128 registers, 16 warps per SM for the loads in
// flight), except M >= 4 on sm_70, where clang 19's code would spill under that cap (a V100 needs far fewer bytes in
// flight). The bound only shapes device code, so the host pass's value does not matter.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 750
template <int MT>
constexpr int kStreamMinBlocks = MT <= 2 ? 2 : 1;
#else
template <int MT>
constexpr int kStreamMinBlocks = 2;
#endif
// Split-sign decode (two dp4a chains) up to M = 2, signed int8 expansion above.
template <int MT>
constexpr bool kSplitSign = MT <= 2;

constexpr int kMagicBits = 0x4B400000;  // 1.5·2^23 as f32 bits
constexpr float kMagic = 12582912.0f;

// prmt.b32 in its default mode, written out because the selector's bit 3 (replicate the selected byte's sign bit) is
// what the split-sign decode relies on, and __byte_perm documents only the 3 index bits.
__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

// Weight loads with ld.global.cs (evict-first), written out because clang's CUDA headers have no __ldcs.
__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 v;
  asm("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ uint32_t load_stream(const uint16_t* p) {
  unsigned short v;
  asm("ld.global.cs.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}

// An E4M3 byte as f32 times 2^-120: the magnitude bits at the top of the exponent/mantissa, the sign bit moved.
__device__ __forceinline__ float e4m3_scaled(uint32_t b) {
  return __uint_as_float(((b & 0x7Fu) << 20) | ((b & 0x80u) << 24));
}

// One weight row's chunk (32 codes = blocks 0, 1) decoded for the dots; word k holds elements 4k..4k+3, the order of
// the activation's int8 words.
template <bool SPLIT>
struct Chunk;
template <>
struct Chunk<true> {
  uint32_t pos[8], neg[8];  // |2·e2m1| of the positive codes (0 for negative ones), and of the negative codes
  float sw[2];              // e4m3 · 2^-120 per block
};
template <>
struct Chunk<false> {
  int q[8];  // 2·e2m1 as int8
  float sw[2];
};

// mag0 = 0x03020100 (the 2·e2m1 magnitudes {0, 1, 2, 3}; {4, 6, 8, 12} is kMag1).
__device__ __forceinline__ void decode(const uint4& c, uint32_t sc, uint32_t mag0, Chunk<true>& d) {
  constexpr uint32_t kMag1 = 0x0C080604u;
  const uint32_t w[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t flipped = w[i] ^ 0x88888888u;
    d.pos[2 * i] = prmt(mag0, kMag1, w[i]);
    d.pos[2 * i + 1] = prmt(mag0, kMag1, w[i] >> 16);
    d.neg[2 * i] = prmt(mag0, kMag1, flipped);
    d.neg[2 * i + 1] = prmt(mag0, kMag1, flipped >> 16);
  }
  d.sw[0] = e4m3_scaled(sc & 0xFFu);
  d.sw[1] = e4m3_scaled(sc >> 8);
}

// e2m1x8_to_i8x2 (kernels/common/nvfp4.cuh) with the low table words in registers (tab.x = positive {0, 1, 2, 3},
// tab.y = negative {0, -1, -2, -3}), for the reason given at `tables` in the kernel.
__device__ __forceinline__ void decode(const uint4& c, uint32_t sc, uint2 tab, Chunk<false>& d) {
  constexpr uint32_t kPos1 = 0x0C080604u, kNeg1 = 0xF4F8FAFCu;
  const uint32_t w[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t mag = w[i] & 0x77777777u, neg = (w[i] >> 1) & 0x44444444u;
    const uint32_t p0 = prmt(tab.x, kPos1, mag), n0 = prmt(tab.y, kNeg1, mag);
    const uint32_t p1 = prmt(tab.x, kPos1, mag >> 16), n1 = prmt(tab.y, kNeg1, mag >> 16);
    d.q[2 * i] = static_cast<int>(prmt(p0, n0, 0x3210u | (neg & 0xFFFFu)));
    d.q[2 * i + 1] = static_cast<int>(prmt(p1, n1, 0x3210u | (neg >> 16)));
  }
  d.sw[0] = e4m3_scaled(sc & 0xFFu);
  d.sw[1] = e4m3_scaled(sc >> 8);
}

// I_b of block b (0, 1) against activation words a[4b .. 4b + 3], as an exact f32.
__device__ __forceinline__ float block_dot(const Chunk<true>& d, const int (&a)[8], int b) {
  int p = kMagicBits, n = kMagicBits;
#pragma unroll
  for (int k = 4 * b; k < 4 * b + 4; ++k) {
    p = __dp4a(static_cast<int>(d.pos[k]), a[k], p);
    n = __dp4a(static_cast<int>(d.neg[k]), a[k], n);
  }
  return __fsub_rn(__int_as_float(p), __int_as_float(n));
}
__device__ __forceinline__ float block_dot(const Chunk<false>& d, const int (&a)[8], int b) {
  int s = kMagicBits;
#pragma unroll
  for (int k = 4 * b; k < 4 * b + 4; ++k) s = __dp4a(d.q[k], a[k], s);
  return __fsub_rn(__int_as_float(s), kMagic);
}

// One activation row's chunk p: 32 int8 (2·e2m1) and the two block scales times 2^119.
struct ActChunk {
  int a[8];
  float sa[2];
};
__device__ __forceinline__ void load_act(const uint8_t* __restrict__ row, const Nvfp4ActLayout& L, int64_t p,
                                         ActChunk& x) {
  const int4 lo = __ldg(reinterpret_cast<const int4*>(row + L.i8) + 2 * p);
  const int4 hi = __ldg(reinterpret_cast<const int4*>(row + L.i8) + 2 * p + 1);
  const float2 s = __ldg(reinterpret_cast<const float2*>(row + L.scale_f32) + p);
  x.a[0] = lo.x;
  x.a[1] = lo.y;
  x.a[2] = lo.z;
  x.a[3] = lo.w;
  x.a[4] = hi.x;
  x.a[5] = hi.y;
  x.a[6] = hi.z;
  x.a[7] = hi.w;
  x.sa[0] = __fmul_rn(s.x, 0x1p119f);
  x.sa[1] = __fmul_rn(s.y, 0x1p119f);
}

// acc += t_b / 2 for both blocks of a chunk, block 0 first.
template <bool SPLIT>
__device__ __forceinline__ void accumulate(const Chunk<SPLIT>& d, const ActChunk& x, float& acc) {
#pragma unroll
  for (int b = 0; b < 2; ++b) acc = fmaf(block_dot(d, x.a, b), __fmul_rn(x.sa[b], d.sw[b]), acc);
}

// One chunk p of a warp's 4 weight rows (codes c, scale pairs sc) against the MT activation rows (rows <= MT live):
// acc[m][r] += its two blocks' terms / 2. A function, not a lambda: clang 19 left a lambda this size outlined, its
// captures in local memory.
template <int MT>
__device__ __forceinline__ void stream_step(const uint8_t* __restrict__ act, const Nvfp4ActLayout& L, int64_t p,
                                            int rows, uint2 tables, const uint4 (&c)[kStreamRows],
                                            const uint32_t (&sc)[kStreamRows], float (&acc)[MT][kStreamRows]) {
  constexpr int R = kStreamRows;
  if constexpr (kSplitSign<MT>) {  // M = MT (1, 2) activation rows in registers, each weight row decoded, used once
    ActChunk x[MT];
#pragma unroll
    for (int m = 0; m < MT; ++m) load_act(act + m * L.row_bytes, L, p, x[m]);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      Chunk<true> d;
      decode(c[r], sc[r], tables.x, d);
#pragma unroll
      for (int m = 0; m < MT; ++m) accumulate(d, x[m], acc[m][r]);
    }
  } else {  // the 4 decoded rows in registers, one activation row at a time
    Chunk<false> d[R];
#pragma unroll
    for (int r = 0; r < R; ++r) decode(c[r], sc[r], tables, d[r]);
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      if (m >= rows) break;
      ActChunk x;
      load_act(act + m * L.row_bytes, L, p, x);
#pragma unroll
      for (int r = 0; r < R; ++r) accumulate(d[r], x, acc[m][r]);
    }
  }
}

template <int MT>
__global__ void __launch_bounds__(kStreamThreads, kStreamMinBlocks<MT>)
    w4a4_stream_kernel(LinearArgs a, Nvfp4WeightView w, const uint8_t* __restrict__ act, int splits) {
  constexpr int R = kStreamRows, U = kStreamUnroll<MT>;
  static_assert(MT * R <= 32, "w4a4_stream_kernel: one lane per output of a warp");
  __shared__ float part[kStreamWarps][MT * R];
  const int rows = static_cast<int>(a.M);
  const int64_t N = a.N, K = a.K;
  const Nvfp4ActLayout L = nvfp4_act_layout(K);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int groups = kStreamWarps / splits;
  const int g = warp / splits, s = warp % splits;
  const int64_t n0 = (static_cast<int64_t>(blockIdx.x) * groups + g) * R;
  const int nr = n0 < N ? static_cast<int>(N - n0 < R ? N - n0 : R) : 0;  // warp-uniform
  const int64_t chunks = K / 32;                                           // per row; also its 2-byte scale pairs

  float acc[MT][R];
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int r = 0; r < R; ++r) acc[m][r] = 0.0f;

  // The decode tables' low words as per-thread values the compiler cannot see as constants (threadIdx.x < blockDim.x
  // always): prmt takes one immediate, and ptxas copied a constant (or warp-uniform) table word into a register
  // again before every prmt, one extra instruction per 4 codes. x: magnitudes {0, 1, 2, 3}; y: {0, -1, -2, -3}.
  const uint32_t opaque_zero = threadIdx.x < blockDim.x ? 0u : 1u;
  const uint2 tables = make_uint2(0x03020100u + opaque_zero, 0xFDFEFF00u + opaque_zero);

  if (nr > 0) {
    // Per row, pointers at this lane's first chunk, advanced by the loop (base + row offset per load cost more
    // instructions and registers with nvcc). Rows past N (the last group) re-read row N - 1: plain loads, no
    // predicates; their sums are dropped at the store.
    const int64_t stride = 32 * static_cast<int64_t>(splits);
    int64_t p = static_cast<int64_t>(s) * 32 + lane;
    const uint4* wc[R];
    const uint16_t* wsc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int64_t n = n0 + (r < nr ? r : nr - 1);
      wc[r] = reinterpret_cast<const uint4*>(w.codes + n * (K / 2)) + p;
      wsc[r] = reinterpret_cast<const uint16_t*>(w.scales + n * (K / 16)) + p;
    }
    // U chunks of the 4 rows loaded before any arithmetic (independent loads in flight together); the tail one at a
    // time. The additions per output stay in chunk order.
    for (; p + (U - 1) * stride < chunks; p += U * stride) {
      uint4 c[U][R];
      uint32_t sc[U][R];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int r = 0; r < R; ++r) {
          c[u][r] = load_stream(wc[r] + u * stride);
          sc[u][r] = load_stream(wsc[r] + u * stride);
        }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        wc[r] += U * stride;
        wsc[r] += U * stride;
      }
#pragma unroll
      for (int u = 0; u < U; ++u) stream_step<MT>(act, L, p + u * stride, rows, tables, c[u], sc[u], acc);
    }
#pragma unroll 1
    for (; p < chunks; p += stride) {
      uint4 c[R];
      uint32_t sc[R];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        c[r] = load_stream(wc[r]);
        sc[r] = load_stream(wsc[r]);
        wc[r] += stride;
        wsc[r] += stride;
      }
      stream_step<MT>(act, L, p, rows, tables, c, sc, acc);
    }
  }

#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int r = 0; r < R; ++r) acc[m][r] = warp_sum(acc[m][r]);
  const float ws2 = w.trailer[0];
  // acc = Σ_b t_b / 2: doubled (exact), then the reference's y = acc · ((g · weight_scale_2) · 0.25).
  auto store = [&](int m, int r, float v) {
    const int64_t n = n0 + r;
    if (m >= rows || n >= N) return;
    const float gm = *reinterpret_cast<const float*>(act + m * L.row_bytes + L.global);
    gemv_put(a.y, a.ys, m, n, __fmul_rn(__fmul_rn(v, 2.0f), __fmul_rn(__fmul_rn(gm, ws2), 0.25f)), a.accumulate);
  };
  if (splits == 1) {
    if (nr == 0) return;
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int r = 0; r < R; ++r)
        if (lane == m * R + r) store(m, r, acc[m][r]);
    return;
  }
  if (lane == 0) {
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int r = 0; r < R; ++r) part[warp][m * R + r] = acc[m][r];
  }
  __syncthreads();
  if (s != 0 || nr == 0 || lane >= MT * R) return;
  float v = 0.0f;
  for (int i = 0; i < splits; ++i) v += part[g * splits + i][lane];
  store(lane / R, lane % R, v);
}

// K slices per row group: the fewest that give the device two CTAs per multiprocessor, keeping at least two chunks
// per lane in a slice.
int stream_splits(int64_t groups, int64_t chunks, int sm_count) {
  int splits = 1;
  auto ctas = [&](int sp) { return (groups + kStreamWarps / sp - 1) / (kStreamWarps / sp); };
  while (splits < kStreamWarps && ctas(splits) < 2 * static_cast<int64_t>(sm_count) && chunks >= 64 * 2 * splits)
    splits *= 2;
  return splits;
}

template <int MT>
void launch_stream(cudaStream_t stream, const LinearArgs& a, const Nvfp4WeightView& w, const uint8_t* act,
                   int sm_count) {
  const int64_t groups = (a.N + kStreamRows - 1) / kStreamRows;
  const int splits = stream_splits(groups, a.K / 32, sm_count);
  const int64_t per = kStreamWarps / splits;
  const auto ctas = static_cast<unsigned>((groups + per - 1) / per);
  w4a4_stream_kernel<MT><<<ctas, kStreamThreads, 0, stream>>>(a, w, act, splits);
}

// The quantizer: one code byte per thread, 256 bytes (32 blocks) of a row per CTA; grid (chunks of the row, rows).
// Every CTA of a row reads the whole row for max|x| and finiteness (K floats from L2, vectorized when the row is
// 16-byte aligned): redundant, but it replaces the one-CTA-per-row kernel's serial walk over the row on one
// multiprocessor, which was the latency of every decode linear.
constexpr int kQuantSplitThreads = 256;

__global__ void __launch_bounds__(kQuantSplitThreads)
    nvfp4_quantize_split_kernel(const float* __restrict__ x, int64_t xs, int64_t M, int64_t K,
                                const float* __restrict__ input_scale, uint8_t* act) {
  __shared__ float scratch[kBlockScratch];
  const int t = static_cast<int>(threadIdx.x);
  const Nvfp4ActLayout L = nvfp4_act_layout(K);
  const int64_t bytes = K / 2;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kQuantSplitThreads + t;
  const bool active = j < bytes;
  const float is = *input_scale;
  for (int64_t m = blockIdx.y; m < M; m += gridDim.y) {  // uniform over the CTA: the block reductions stay legal
    const float* row = x + m * xs;
    uint8_t* out = act + m * L.row_bytes;
    float amax = 0.0f;
    bool bad = false;
    if (reinterpret_cast<uintptr_t>(row) % 16 == 0) {
      const float4* row4 = reinterpret_cast<const float4*>(row);
#pragma unroll 4
      for (int64_t k = t; k < K / 4; k += kQuantSplitThreads) {  // unrolled: the loads in flight together
        const float4 v = __ldg(row4 + k);
        bad |= !isfinite(v.x) | !isfinite(v.y) | !isfinite(v.z) | !isfinite(v.w);
        amax = fmaxf(fmaxf(amax, fmaxf(fabsf(v.x), fabsf(v.y))), fmaxf(fabsf(v.z), fabsf(v.w)));
      }
    } else {
#pragma unroll 4
      for (int64_t k = t; k < K; k += kQuantSplitThreads) {
        const float v = __ldg(row + k);
        bad |= !isfinite(v);
        amax = fmaxf(amax, fabsf(v));
      }
    }
    amax = block_max(amax, scratch);
    const float any_bad = block_max(bad ? 1.0f : 0.0f, scratch);
    const Nvfp4RowScale rs = nvfp4_row_scale(amax, any_bad != 0.0f, is);
    const float x0 = active ? __ldg(row + 2 * j) : 0.0f, x1 = active ? __ldg(row + 2 * j + 1) : 0.0f;
    const float block_amax = warp_max<8>(fmaxf(fabsf(x0), fabsf(x1)));  // the 8 lanes of a 16-block
    if (active) nvfp4_quantize_byte(x0, x1, block_amax, rs, L, out, j);
    if (blockIdx.x == 0 && t == 0) *reinterpret_cast<float*>(out + L.global) = rs.g;
  }
}

}  // namespace

void linear_nvfp4_w4a4_stream(cudaStream_t stream, const LinearArgs& a, const Nvfp4WeightView& w, const uint8_t* act,
                              int sm_count) {
  if (a.M == 1) launch_stream<1>(stream, a, w, act, sm_count);
  else if (a.M == 2) launch_stream<2>(stream, a, w, act, sm_count);
  else if (a.M <= 4) launch_stream<4>(stream, a, w, act, sm_count);
  else launch_stream<8>(stream, a, w, act, sm_count);
}

void nvfp4_quantize_act_split(cudaStream_t stream, const float* x, int64_t xs, int64_t M, int64_t K,
                              const float* input_scale, uint8_t* act) {
  if (M <= 0 || K <= 0) return;
  const dim3 grid(static_cast<unsigned>((K / 2 + kQuantSplitThreads - 1) / kQuantSplitThreads),
                  static_cast<unsigned>(std::min<int64_t>(M, 65535)));
  nvfp4_quantize_split_kernel<<<grid, kQuantSplitThreads, 0, stream>>>(x, xs, M, K, input_scale, act);
}

}  // namespace ninfer::kern
