// The gated delta rule in recurrent form: one CTA per (sequence, value head, 32-column slice of S) keeps its slice of
// the fp32 state in registers across the sequence's tokens (staged 8 at a time in smem), writes out per token, a
// checkpoint copy of S after every row that asks for one, and S back at the end. The launch shape depends only on
// dk and dv, so a sequence gives the same bits whether it comes 1 or K tokens per call.
#include <cuda_runtime.h>

#include "kernels/gdn/delta_tile.cuh"
#include "kernels/gdn/gdn.h"
#include "kernels/gdn/gdn_common.cuh"

namespace ninfer::kern {
namespace {

using namespace gdn;

constexpr int kStage = 8;  // tokens staged in smem per pass

template <int KT>
__global__ void __launch_bounds__(kTileThreads) delta_recurrent_kernel(DeltaRuleView p, I32Span seqs, bool vec) {
  constexpr int DKP = StateTile<KT>::kRowsPadded;
  __shared__ float qs[kStage][DKP], ks[kStage][DKP], vs[kStage][kTileCols];
  __shared__ float gs[kStage], bs[kStage];
  __shared__ int cks[kStage];

  const int s = seqs.data[blockIdx.z], h = blockIdx.y, v0 = blockIdx.x * kTileCols, tid = threadIdx.x;
  const int r0 = p.q_start.data[s], r1 = p.q_start.data[s + 1];
  const int kh = h / (p.nv / p.nk);
  StateTile<KT> tile;
  tile.init(tid, v0);
  float* S = head_state(p, p.state_slot.data[s], h);
  tile.load(S, p.dk, p.dv, vec);
  const int vcol = (tid / kKThreads) * kColsPerThread;  // this thread's first column within the slice

  for (int t0 = r0; t0 < r1; t0 += kStage) {
    const int n = min(kStage, r1 - t0);
    __syncthreads();  // the previous pass is done with the staged rows
    for (int i = tid; i < kStage * DKP; i += kTileThreads) {
      const int j = i / DKP, d = i % DKP;
      const bool in = j < n && d < p.dk;
      qs[j][d] = in ? row3<const float>(p.q, t0 + j, kh)[d] : 0.0f;
      ks[j][d] = in ? row3<const float>(p.k, t0 + j, kh)[d] : 0.0f;
    }
    for (int i = tid; i < kStage * kTileCols; i += kTileThreads) {
      const int j = i / kTileCols, c = i % kTileCols;
      vs[j][c] = (j < n && v0 + c < p.dv) ? row3<const float>(p.v, t0 + j, h)[v0 + c] : 0.0f;
    }
    if (tid < kStage) {
      const bool in = tid < n;
      gs[tid] = in ? row2<const float>(p.g, t0 + tid)[h] : 0.0f;
      bs[tid] = in ? row2<const float>(p.beta, t0 + tid)[h] : 0.0f;
      cks[tid] = (in && p.checkpoint_slot.n > 0) ? p.checkpoint_slot.data[t0 + tid] : -1;
    }
    __syncthreads();

    for (int j = 0; j < n; ++j) {
      // S ← e^g S;  kv = Sᵀk
      const float decay = expf(gs[j]), b = bs[j];
      float kv[kColsPerThread] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int r = 0; r < KT; ++r) {
        const float kr = ks[j][r * kKThreads + tile.kth];
#pragma unroll
        for (int c = 0; c < kColsPerThread; ++c) {
          tile.s[r][c] *= decay;
          kv[c] = fmaf(tile.s[r][c], kr, kv[c]);
        }
      }
      float u[kColsPerThread];
#pragma unroll
      for (int c = 0; c < kColsPerThread; ++c) u[c] = b * (vs[j][vcol + c] - ksum(kv[c]));
      // S ← S + k uᵀ;  out = Sᵀq
      float o[kColsPerThread] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int r = 0; r < KT; ++r) {
        const float kr = ks[j][r * kKThreads + tile.kth], qr = qs[j][r * kKThreads + tile.kth];
#pragma unroll
        for (int c = 0; c < kColsPerThread; ++c) {
          tile.s[r][c] = fmaf(kr, u[c], tile.s[r][c]);
          o[c] = fmaf(tile.s[r][c], qr, o[c]);
        }
      }
#pragma unroll
      for (int c = 0; c < kColsPerThread; ++c) o[c] = ksum(o[c]);
      if (tile.kth == 0) {
        float* orow = row3<float>(p.out, t0 + j, h);
#pragma unroll
        for (int c = 0; c < kColsPerThread; ++c)
          if (tile.col0 + c < p.dv) orow[tile.col0 + c] = o[c];
      }
      if (cks[j] >= 0) tile.store(head_state(p, cks[j], h), p.dk, p.dv, vec);
    }
  }
  tile.store(S, p.dk, p.dv, vec);
}

template <int KT>
void launch_recurrent(cudaStream_t stream, const DeltaRuleView& p, const I32Span& seqs, bool vec) {
  const dim3 grid((p.dv + kTileCols - 1) / kTileCols, p.nv, static_cast<unsigned>(seqs.n));
  delta_recurrent_kernel<KT><<<grid, kTileThreads, 0, stream>>>(p, seqs, vec);
}

}  // namespace

void gdn_delta_recurrent(cudaStream_t stream, const DeltaRuleView& p, const I32Span& seqs) {
  if (seqs.n == 0 || p.nv == 0 || p.dv == 0) return;
  const bool vec = p.dv % 4 == 0 && reinterpret_cast<uintptr_t>(p.state) % 16 == 0;
  if (p.dk <= 16) launch_recurrent<2>(stream, p, seqs, vec);
  else if (p.dk <= 32) launch_recurrent<4>(stream, p, seqs, vec);
  else if (p.dk <= 64) launch_recurrent<8>(stream, p, seqs, vec);
  else launch_recurrent<16>(stream, p, seqs, vec);
}

}  // namespace ninfer::kern
