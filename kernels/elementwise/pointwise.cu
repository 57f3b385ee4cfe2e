// Pointwise binary ops over f32 rows (add, silu_mul, sigmoid_mul), each operand with its own strided row layout.
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/common/load.cuh"
#include "kernels/common/rows.cuh"
#include "kernels/elementwise/elementwise.h"

namespace ninfer::kern {
namespace {

constexpr int kThreads = 256;
constexpr int kColIters = 4;  // vectors per thread per block along a row

template <PointwiseKind K>
__device__ __forceinline__ float apply(float a, float b) {
  if (K == PointwiseKind::kAdd) return a + b;
  if (K == PointwiseKind::kSiluMul) return a / (1.0f + expf(-a)) * b;
  return a * (1.0f / (1.0f + expf(-b)));
}

// Block (tx, ty): ty rows per block (grid.x over row groups), tx threads along a row, each covering kColIters
// vectors of VEC elements per block (grid.y over column chunks). y may alias a or b (each element is read before
// the same thread writes it).
template <PointwiseKind K, int VEC>
__global__ void __launch_bounds__(kThreads) pointwise_kernel(Rows y, Rows a, Rows b) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (row >= a.rows) return;
  const float* ar = row_ptr<const float>(a, row);
  const float* br = row_ptr<const float>(b, row);
  float* yr = row_ptr<float>(y, row);
  const int64_t nvec = a.n / VEC;
  const int64_t v0 = static_cast<int64_t>(blockIdx.y) * blockDim.x * kColIters + threadIdx.x;
#pragma unroll
  for (int it = 0; it < kColIters; ++it) {
    const int64_t v = v0 + static_cast<int64_t>(it) * blockDim.x;
    if (v >= nvec) break;
    float av[VEC], bv[VEC], out[VEC];
    load_vec<VEC>(ar + v * VEC, av);
    load_vec<VEC>(br + v * VEC, bv);
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = apply<K>(av[i], bv[i]);
    store_vec<VEC>(yr + v * VEC, out);
  }
}

template <PointwiseKind K, int VEC>
void launch(cudaStream_t stream, const Rows& y, const Rows& a, const Rows& b) {
  const int64_t nvec = a.n / VEC;
  int tx = 32;
  while (tx < kThreads && tx < nvec) tx *= 2;
  const int ty = kThreads / tx;
  const int64_t row_blocks = (a.rows + ty - 1) / ty;
  const int64_t col_blocks = (nvec + static_cast<int64_t>(tx) * kColIters - 1) / (static_cast<int64_t>(tx) * kColIters);
  const dim3 grid(static_cast<unsigned>(row_blocks), static_cast<unsigned>(col_blocks));
  pointwise_kernel<K, VEC><<<grid, dim3(tx, ty), 0, stream>>>(y, a, b);
}

template <PointwiseKind K>
void launch_vec(cudaStream_t stream, const Rows& y, const Rows& a, const Rows& b) {
  if (rows_vectorizable(y, 4) && rows_vectorizable(a, 4) && rows_vectorizable(b, 4))
    launch<K, 4>(stream, y, a, b);
  else
    launch<K, 1>(stream, y, a, b);
}

}  // namespace

void pointwise(cudaStream_t stream, PointwiseKind kind, const Rows& y, const Rows& a, const Rows& b) {
  if (a.rows == 0 || a.n == 0) return;
  switch (kind) {
    case PointwiseKind::kAdd: launch_vec<PointwiseKind::kAdd>(stream, y, a, b); break;
    case PointwiseKind::kSiluMul: launch_vec<PointwiseKind::kSiluMul>(stream, y, a, b); break;
    case PointwiseKind::kSigmoidMul: launch_vec<PointwiseKind::kSigmoidMul>(stream, y, a, b); break;
  }
}

}  // namespace ninfer::kern
