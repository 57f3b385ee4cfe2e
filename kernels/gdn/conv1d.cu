// Causal depthwise conv1d over time with a carried raw-input state (Gated DeltaNet), optional SiLU, per-row
// state checkpoints. Two kernels: the outputs (and checkpoints), then the state update, so no thread overwrites a
// state row another one still reads.
#include <cuda_runtime.h>

#include "kernels/common/load.cuh"
#include "kernels/gdn/gdn.h"
#include "kernels/gdn/gdn_common.cuh"

namespace ninfer::kern {
namespace {

using gdn::row2;
using gdn::seq_of_row;

constexpr int kConvThreads = 128;  // channels per block
constexpr int kMaxGridY = 65535;

struct ConvArgs {
  Rows out, x, w;
  int64_t w_stride;  // elements between the taps of two channels
  float* state;
  int K, C;
  I32Span q_start, state_slot, checkpoint_slot;
  bool silu;
};

// Window row i of the sequence (rows r0.. of x, state st [K−1, C]): concat(state rows, x rows), channel c.
__device__ __forceinline__ float window(const ConvArgs& p, const float* st, int r0, int i, int c) {
  return i < p.K - 1 ? st[static_cast<int64_t>(i) * p.C + c] : row2<const float>(p.x, r0 + i - (p.K - 1))[c];
}

// One thread per (row, channel): out[t, c] = act(Σ_j w[c, j] · window[t + j]); the sum is formed as the CPU op
// forms it (0, then + w·x per tap, each product and sum rounded: no FMA), so without SiLU the outputs are the
// CPU's bits. With a checkpoint on row t, the K−1 window rows after t go to that state row.
template <typename W>
__global__ void __launch_bounds__(kConvThreads) conv1d_kernel(ConvArgs p) {
  const int c = blockIdx.x * kConvThreads + threadIdx.x;
  if (c >= p.C) return;
  const int T = static_cast<int>(p.x.rows);
  const W* wc = static_cast<const W*>(p.w.data) + static_cast<int64_t>(c) * p.w_stride;
  for (int t = blockIdx.y; t < T; t += gridDim.y) {
    const int s = seq_of_row(p.q_start, t);
    const int r0 = p.q_start.data[s];
    const float* st = p.state + static_cast<int64_t>(p.state_slot.data[s]) * (p.K - 1) * p.C;
    const int tl = t - r0;
    float acc = 0.0f;
    for (int j = 0; j < p.K; ++j) acc = __fadd_rn(acc, __fmul_rn(to_float(wc[j]), window(p, st, r0, tl + j, c)));
    if (p.silu) acc = __fdiv_rn(acc, 1.0f + expf(-acc));
    row2<float>(p.out, t)[c] = acc;
    const int ck = p.checkpoint_slot.n > 0 ? p.checkpoint_slot.data[t] : -1;
    if (ck >= 0) {
      float* cs = p.state + static_cast<int64_t>(ck) * (p.K - 1) * p.C;
      for (int i = 0; i < p.K - 1; ++i) cs[static_cast<int64_t>(i) * p.C + c] = window(p, st, r0, tl + 1 + i, c);
    }
  }
}

// One thread per (sequence, channel): state ← the last K−1 window rows. Ascending i reads row i + n >= i, so the
// in-place shift of a short sequence is safe; a sequence with no rows keeps its state.
__global__ void __launch_bounds__(kConvThreads) conv1d_state_kernel(ConvArgs p) {
  const int c = blockIdx.x * kConvThreads + threadIdx.x;
  if (c >= p.C) return;
  const int S = static_cast<int>(p.q_start.n) - 1;
  for (int s = blockIdx.y; s < S; s += gridDim.y) {
    const int r0 = p.q_start.data[s], n = p.q_start.data[s + 1] - r0;
    if (n == 0) continue;
    float* st = p.state + static_cast<int64_t>(p.state_slot.data[s]) * (p.K - 1) * p.C;
    for (int i = 0; i < p.K - 1; ++i) st[static_cast<int64_t>(i) * p.C + c] = window(p, st, r0, i + n, c);
  }
}

}  // namespace

void gdn_conv1d(cudaStream_t stream, const Rows& out, const Rows& x, const Rows& w, float* state, int64_t K,
                const I32Span& q_start, const I32Span& state_slot, const I32Span& checkpoint_slot, bool silu) {
  const int T = static_cast<int>(x.rows), C = static_cast<int>(x.n), S = static_cast<int>(q_start.n) - 1;
  if (C == 0 || S <= 0) return;
  const ConvArgs p{out, x, w, w.nlead > 0 ? w.lead_stride[0] : K, state, static_cast<int>(K), C, q_start, state_slot, checkpoint_slot, silu};
  const int cblocks = (C + kConvThreads - 1) / kConvThreads;
  if (T > 0) {
    const dim3 grid(cblocks, T < kMaxGridY ? T : kMaxGridY);
    visit_float_type(w.type, [&](auto tag) { conv1d_kernel<decltype(tag)><<<grid, kConvThreads, 0, stream>>>(p); });
  }
  if (K > 1 && T > 0) conv1d_state_kernel<<<dim3(cblocks, S < kMaxGridY ? S : kMaxGridY), kConvThreads, 0, stream>>>(p);
}

}  // namespace ninfer::kern
