// Row norms (rms_norm, gated_rms_norm, l2_norm, and add_rms_norm: the residual add fused in front of rms_norm) over
// the last dim of f32 rows, Σx² accumulated in double like the CPU op, so the per-row factor almost always rounds to
// the same f32.
#include <cuda_runtime.h>

#include "kernels/common/load.cuh"
#include "kernels/common/rows.cuh"
#include "kernels/common/reduce.cuh"
#include "kernels/elementwise/elementwise.h"

namespace ninfer::kern {
namespace {

constexpr int kWarpRowsPerBlock = 4;  // warp-per-row launches: 128 threads, 4 rows
constexpr int kBlockThreads = 256;    // block-per-row launches
constexpr int64_t kWarpRowMaxN = 1024;

__device__ __forceinline__ float silu(float v) { return v / (1.0f + expf(-v)); }

// TPR = threads per row: 32 (one warp per row, kWarpRowsPerBlock rows per block) or kBlockThreads (one block per
// row). The row is read twice (Σx², then the output); the second read mostly hits L1/L2. y may alias x. kAddRms
// writes x + z back into x in the first pass and reads it back in the second: each thread reads only the elements it
// wrote itself (both passes give a thread the same vectors), so no barrier is needed, and y may alias z.
template <NormKind K, typename W, int VEC, int TPR>
__global__ void __launch_bounds__(TPR == 32 ? 32 * kWarpRowsPerBlock : kBlockThreads)
    norm_kernel(NormArgs a) {
  int64_t row;
  int lane;
  if (TPR == 32) {
    row = static_cast<int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / 32;
    lane = static_cast<int>(threadIdx.x & 31);
    if (row >= a.x.rows) return;  // the whole warp leaves together
  } else {
    row = blockIdx.x;
    lane = static_cast<int>(threadIdx.x);
  }
  const int64_t n = a.x.n;
  const int64_t nvec = n / VEC;
  float* x = row_ptr<float>(a.x, row);
  float* y = row_ptr<float>(a.y, row);
  const float* z = K == NormKind::kGatedRms || K == NormKind::kAddRms ? row_ptr<const float>(a.z, row) : nullptr;
  const W* w = static_cast<const W*>(a.w);

  double ss = 0.0;
  for (int64_t v = lane; v < nvec; v += TPR) {
    float xv[VEC];
    load_vec<VEC>(x + v * VEC, xv);
    if (K == NormKind::kAddRms) {
      float dv[VEC];
      load_vec<VEC>(z + v * VEC, dv);
#pragma unroll
      for (int i = 0; i < VEC; ++i) xv[i] = xv[i] + dv[i];
      store_vec<VEC>(x + v * VEC, xv);
    }
#pragma unroll
    for (int i = 0; i < VEC; ++i) ss += static_cast<double>(xv[i]) * static_cast<double>(xv[i]);  // exact product
  }
  if (TPR == 32) {
    ss = warp_sum(ss);
  } else {
    __shared__ double scratch[kBlockScratch];
    ss = block_sum(ss, scratch);
  }
  float inv;
  if (K == NormKind::kL2)
    inv = static_cast<float>(static_cast<double>(a.scale) / sqrt(ss + static_cast<double>(a.eps)));
  else
    inv = static_cast<float>(1.0 / sqrt(ss / static_cast<double>(n) + static_cast<double>(a.eps)));

  for (int64_t v = lane; v < nvec; v += TPR) {
    float xv[VEC], out[VEC];
    load_vec<VEC>(x + v * VEC, xv);
    if (K == NormKind::kL2) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) out[i] = xv[i] * inv;
    } else if (K == NormKind::kRms || K == NormKind::kAddRms) {
      float wv[VEC];
      load_vec<VEC>(w + v * VEC, wv);
#pragma unroll
      for (int i = 0; i < VEC; ++i) out[i] = xv[i] * inv * (wv[i] + a.w_offset);
    } else {
      float wv[VEC], zv[VEC];
      load_vec<VEC>(w + v * VEC, wv);
      load_vec<VEC>(z + v * VEC, zv);
#pragma unroll
      for (int i = 0; i < VEC; ++i) out[i] = wv[i] * (xv[i] * inv) * silu(zv[i]);
    }
    store_vec<VEC>(y + v * VEC, out);
  }
}

template <NormKind K, typename W, int VEC>
void launch(cudaStream_t stream, const NormArgs& a) {
  if (a.x.n <= kWarpRowMaxN) {
    const int64_t blocks = (a.x.rows + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock;
    norm_kernel<K, W, VEC, 32><<<static_cast<unsigned>(blocks), 32 * kWarpRowsPerBlock, 0, stream>>>(a);
  } else {
    norm_kernel<K, W, VEC, kBlockThreads><<<static_cast<unsigned>(a.x.rows), kBlockThreads, 0, stream>>>(a);
  }
}

template <NormKind K, typename W>
void launch_vec(cudaStream_t stream, const NormArgs& a) {
  Rows w;
  w.data = const_cast<void*>(a.w);
  w.type = a.w_type;
  w.rows = 1;
  w.n = a.x.n;
  const bool vec4 = rows_vectorizable(a.x, 4) && rows_vectorizable(a.y, 4) &&
                    ((K != NormKind::kGatedRms && K != NormKind::kAddRms) || rows_vectorizable(a.z, 4)) &&
                    (K == NormKind::kL2 || rows_vectorizable(w, 4));
  if (vec4)
    launch<K, W, 4>(stream, a);
  else
    launch<K, W, 1>(stream, a);
}

}  // namespace

void row_norm(cudaStream_t stream, NormKind kind, const NormArgs& args) {
  if (args.x.rows == 0 || args.x.n == 0) return;
  if (kind == NormKind::kL2) {
    launch_vec<NormKind::kL2, float>(stream, args);
    return;
  }
  visit_float_type(args.w_type, [&](auto tag) {
    using W = decltype(tag);
    if (kind == NormKind::kRms)
      launch_vec<NormKind::kRms, W>(stream, args);
    else if (kind == NormKind::kAddRms)
      launch_vec<NormKind::kAddRms, W>(stream, args);
    else
      launch_vec<NormKind::kGatedRms, W>(stream, args);
  });
}

}  // namespace ninfer::kern
