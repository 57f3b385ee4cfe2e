// The W4A4 prefill GEMM on tensor cores (wmma m16n16k16, fp16 inputs, f32 accumulation; sm_70 and newer): for
// M >= kMmaMinRows activation rows, 128 × 128 outputs per CTA of 8 warps, K in steps of two NVFP4 blocks.
//
// Exactness of the inputs: an activation element enters as (2·e2m1)·sa and a weight element as (2·e2m1)·sw, with sa,
// sw the blocks' E4M3 scales. 2·e2m1 has at most 2 significant bits and E4M3 at most 4, so each product has at most
// 6 significant bits and lies in [2^-9, 12·448]: exact in fp16 (normal from 2^-14, max 65504). A product of two such
// fp16 values is exact in f32, so Σ_k A'·B' = Σ_b I_b·(sa_b·sw_b) up to the f32 accumulation order of the tensor
// cores (which differs from the CPU's block order: the op suite's summation-order tolerance covers it); the epilogue
// applies (g·weight_scale_2)·0.25 as the SIMT kernels do. A non-finite activation row has codes 0 and g = NaN, so its
// outputs are NaN as on the CPU; a NaN weight scale makes its column NaN.
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>

#include "kernels/common/nvfp4.cuh"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/nvfp4_mma.h"

namespace ninfer::kern {

namespace {

constexpr int kBM = 128, kBN = 128, kBK = 32;  // CTA tile; kBK = two 16-element blocks
constexpr int kWarpsM = 4, kWarpsN = 2;        // 8 warps, each 32 × 64 outputs = 2 × 4 fragments
constexpr int kThreads = kWarpsM * kWarpsN * 32;
constexpr int kLd = kBK + 8;  // smem row pitch in halves: 80 bytes, a multiple of 16 (wmma) and off the bank period
constexpr int kFragsM = 2, kFragsN = 4;

static_assert(kBM * kBK / 16 == kThreads && kBN * kBK / 16 == kThreads, "one A block and one B block per thread and K step");

// 16 fp16 values v_i = f(i) into smem at dst (16-byte aligned).
__device__ __forceinline__ void store16(__half* dst, const float (&v)[16]) {
  __align__(16) __half h[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) h[i] = __float2half_rn(v[i]);
  reinterpret_cast<uint4*>(dst)[0] = reinterpret_cast<const uint4*>(h)[0];
  reinterpret_cast<uint4*>(dst)[1] = reinterpret_cast<const uint4*>(h)[1];
}

__global__ void __launch_bounds__(kThreads)  // ~180 registers: (kThreads, 2) spills
    w4a4_mma_kernel(LinearArgs a, Nvfp4WeightView w, const uint8_t* __restrict__ act) {
  using namespace nvcuda;
  __shared__ __align__(128) __half As[kBM * kLd];
  __shared__ __align__(128) __half Bs[kBN * kLd];
  __shared__ __align__(128) float Cs[kWarpsM * kWarpsN][16 * 16];

  const int t = static_cast<int>(threadIdx.x);
  const int warp = t / 32, lane = t % 32;
  const int wm = warp / kWarpsN, wn = warp % kWarpsN;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kBM, n0 = static_cast<int64_t>(blockIdx.x) * kBN;
  const int64_t M = a.M, N = a.N, K = a.K;
  const int64_t blocks = K / 16;
  const Nvfp4ActLayout L = nvfp4_act_layout(K);

  // Thread t loads block (t % 2) of the K step for activation row t / 2 and for weight row t / 2.
  const int lr = t / 2, lb = t % 2;
  const int64_t am = m0 + lr, wn_row = n0 + lr;
  const uint8_t* arow = act + (am < M ? am : 0) * L.row_bytes;
  const uint8_t* wcodes = w.codes + (wn_row < N ? wn_row : 0) * (K / 2);
  const uint8_t* wscales = w.scales + (wn_row < N ? wn_row : 0) * (K / 16);

  int4 ra = make_int4(0, 0, 0, 0);
  float rsa = 0.0f;
  uint2 rb = make_uint2(0, 0);
  uint32_t rsw = 0;
  auto load = [&](int64_t step) {
    const int64_t b = step * 2 + lb;
    const bool kin = b < blocks;
    ra = kin && am < M ? __ldg(reinterpret_cast<const int4*>(arow + L.i8) + b) : make_int4(0, 0, 0, 0);
    rsa = kin && am < M ? __ldg(reinterpret_cast<const float*>(arow + L.scale_f32) + b) : 0.0f;
    rb = kin && wn_row < N ? __ldg(reinterpret_cast<const uint2*>(wcodes) + b) : make_uint2(0, 0);
    rsw = kin && wn_row < N ? __ldg(wscales + b) : 0u;
  };
  auto store = [&]() {
    float v[16];
    const int32_t words[4] = {ra.x, ra.y, ra.z, ra.w};
#pragma unroll
    for (int i = 0; i < 16; ++i)
      v[i] = __fmul_rn(static_cast<float>(static_cast<int8_t>(static_cast<uint32_t>(words[i / 4]) >> (8 * (i % 4)))),
                       rsa);
    store16(As + lr * kLd + lb * 16, v);
    const float sw = e4m3_decode(rsw);
#pragma unroll
    for (int i = 0; i < 16; ++i) v[i] = __fmul_rn(__fmul_rn(e2m1_to_f32((i < 8 ? rb.x : rb.y) >> (4 * (i % 8))), 2.0f), sw);
    store16(Bs + lr * kLd + lb * 16, v);
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kFragsM][kFragsN];
#pragma unroll
  for (int i = 0; i < kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int64_t steps = (blocks + 1) / 2;
  if (steps > 0) {
    load(0);
    store();
  }
  __syncthreads();
  for (int64_t s = 0; s < steps; ++s) {
    if (s + 1 < steps) load(s + 1);
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[kFragsM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb[kFragsN];
#pragma unroll
      for (int i = 0; i < kFragsM; ++i) wmma::load_matrix_sync(fa[i], As + (wm * 32 + i * 16) * kLd + kk, kLd);
#pragma unroll
      for (int j = 0; j < kFragsN; ++j) wmma::load_matrix_sync(fb[j], Bs + (wn * 64 + j * 16) * kLd + kk, kLd);
#pragma unroll
      for (int i = 0; i < kFragsM; ++i)
#pragma unroll
        for (int j = 0; j < kFragsN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
    if (s + 1 < steps) {
      store();
      __syncthreads();
    }
  }

  // Epilogue, one fragment at a time through this warp's 16 × 16 scratch: y = acc · (g·ws2)·0.25 (+ y).
  const float ws2 = w.trailer[0];
  float* scratch = Cs[warp];
#pragma unroll
  for (int i = 0; i < kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) {
      wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
#pragma unroll
      for (int e = lane; e < 256; e += 32) {
        const int64_t m = m0 + wm * 32 + i * 16 + e / 16, n = n0 + wn * 64 + j * 16 + e % 16;
        if (m < M && n < N) {
          const float g = *reinterpret_cast<const float*>(act + m * L.row_bytes + L.global);
          const float v = __fmul_rn(scratch[e], __fmul_rn(__fmul_rn(g, ws2), 0.25f));
          float* y = a.y + m * a.ys + n;
          *y = a.accumulate ? *y + v : v;
        }
      }
      __syncwarp();
    }
}

}  // namespace

void linear_nvfp4_w4a4_mma(cudaStream_t stream, const LinearArgs& a, const Nvfp4WeightView& w, const uint8_t* act) {
  const dim3 grid(static_cast<unsigned>((a.N + kBN - 1) / kBN), static_cast<unsigned>((a.M + kBM - 1) / kBM));
  w4a4_mma_kernel<<<grid, kThreads, 0, stream>>>(a, w, act);
}

}  // namespace ninfer::kern
