// Row gathers into f32 (embedding lookups, gather_rows): y[r] = f32(src[index[r]]), widened exactly.
#include <cuda_runtime.h>

#include "kernels/common/load.cuh"
#include "kernels/elementwise/elementwise.h"

namespace ninfer::kern {
namespace {

constexpr int kThreads = 256;
constexpr int kColIters = 4;

// grid (R, column chunks of kThreads·kColIters vectors), block kThreads. y and src are 2-D (one leading dim).
template <typename T, int VEC>
__global__ void __launch_bounds__(kThreads) gather_kernel(Rows y, Rows src, const int32_t* index) {
  const int64_t r = blockIdx.x;
  const T* sr = static_cast<const T*>(src.data) + static_cast<int64_t>(index[r]) * src.lead_stride[0];
  float* yr = static_cast<float*>(y.data) + r * y.lead_stride[0];
  const int64_t nvec = y.n / VEC;
  const int64_t v0 = static_cast<int64_t>(blockIdx.y) * kThreads * kColIters + threadIdx.x;
#pragma unroll
  for (int it = 0; it < kColIters; ++it) {
    const int64_t v = v0 + static_cast<int64_t>(it) * kThreads;
    if (v >= nvec) break;
    float vals[VEC];
    load_vec<VEC>(sr + v * VEC, vals);
    store_vec<VEC>(yr + v * VEC, vals);
  }
}

template <typename T, int VEC>
void launch(cudaStream_t stream, const Rows& y, const Rows& src, const int32_t* index) {
  const int64_t nvec = y.n / VEC;
  const int64_t col_blocks = (nvec + kThreads * kColIters - 1) / (kThreads * kColIters);
  const dim3 grid(static_cast<unsigned>(y.rows), static_cast<unsigned>(col_blocks));
  gather_kernel<T, VEC><<<grid, kThreads, 0, stream>>>(y, src, index);
}

}  // namespace

void gather_rows(cudaStream_t stream, const Rows& y, const Rows& src, const int32_t* index) {
  if (y.rows == 0 || y.n == 0) return;
  visit_float_type(src.type, [&](auto tag) {
    using T = decltype(tag);
    // Vectors of 8 for 16-bit sources (16-byte loads), 4 for f32; 1 when a row start is not aligned.
    constexpr int kVec = sizeof(T) == 2 ? 8 : 4;
    if (rows_vectorizable(y, kVec) && rows_vectorizable(src, kVec))
      launch<T, kVec>(stream, y, src, index);
    else
      launch<T, 1>(stream, y, src, index);
  });
}

}  // namespace ninfer::kern
