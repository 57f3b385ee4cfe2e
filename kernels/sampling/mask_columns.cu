// Column masking of logit rows: the ids a model may not produce (padded vocabulary rows) set to -inf on the device,
// so a greedy choice (argmax_rows) or a copied row never holds them.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/sampling/sampling.h"

namespace ninfer::kern {
namespace {

constexpr int kThreads = 256;

constexpr int64_t kMaxGridY = 65535;

// grid (ceil(n / kThreads), min(rows, 65535)): one thread per column, coalesced over the row and over `allowed`;
// a column's thread masks it in rows blockIdx.y, blockIdx.y + gridDim.y, …
__global__ void __launch_bounds__(kThreads) mask_columns_kernel(Rows x, const int8_t* allowed) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= x.n || allowed[c] != 0) return;
  for (int64_t r = blockIdx.y; r < x.rows; r += gridDim.y) x.row<float>(r)[c] = -INFINITY;
}

}  // namespace

void mask_columns(cudaStream_t stream, const Rows& x, const int8_t* allowed) {
  if (x.rows == 0 || x.n == 0) return;
  const dim3 grid(static_cast<unsigned>((x.n + kThreads - 1) / kThreads), static_cast<unsigned>(x.rows < kMaxGridY ? x.rows : kMaxGridY));
  mask_columns_kernel<<<grid, kThreads, 0, stream>>>(x, allowed);
}

}  // namespace ninfer::kern
