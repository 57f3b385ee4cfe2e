// Gated DeltaNet gating: g = −exp(A_log) · softplus(a + dt_bias) (softplus(x) = x above 20), beta = sigmoid(b).
#include <cuda_runtime.h>

#include "kernels/common/load.cuh"
#include "kernels/gdn/gdn.h"
#include "kernels/gdn/gdn_common.cuh"

namespace ninfer::kern {
namespace {

using gdn::row2;

constexpr int kGatingThreads = 256;

// One thread per (row, value head), written as the CPU op writes it (expf/log1pf are within 2 ulp of glibc's).
template <typename WA, typename WD>
__global__ void __launch_bounds__(kGatingThreads) gating_kernel(Rows g, Rows beta, Rows a, Rows b, const WA* A_log,
                                                                const WD* dt_bias) {
  const int64_t nv = a.n, total = a.rows * nv;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kGatingThreads) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * kGatingThreads) {
    const int64_t t = i / nv, h = i % nv;
    const float xa = row2<float>(a, t)[h] + to_float(dt_bias[h]);
    const float sp = xa > 20.0f ? xa : log1pf(expf(xa));
    const float bv = row2<float>(b, t)[h];
    row2<float>(g, t)[h] = -expf(to_float(A_log[h])) * sp;
    row2<float>(beta, t)[h] = __fdiv_rn(1.0f, 1.0f + expf(-bv));
  }
}

}  // namespace

void gdn_gating(cudaStream_t stream, const Rows& g, const Rows& beta, const Rows& a, const Rows& b, const Rows& A_log,
                const Rows& dt_bias) {
  const int64_t total = a.rows * a.n;
  if (total == 0) return;
  const int64_t want = (total + kGatingThreads - 1) / kGatingThreads;
  const int blocks = static_cast<int>(want < 4096 ? want : 4096);
  visit_float_type(A_log.type, [&](auto ta) {
    visit_float_type(dt_bias.type, [&](auto td) {
      using TA = decltype(ta);
      using TD = decltype(td);
      gating_kernel<TA, TD><<<blocks, kGatingThreads, 0, stream>>>(g, beta, a, b, static_cast<const TA*>(A_log.data),
                                                                   static_cast<const TD*>(dt_bias.data));
    });
  });
}

}  // namespace ninfer::kern
