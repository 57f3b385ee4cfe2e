// The gated delta rule in chunked (WY / UT) form, chunks of 64 rows, three kernels per window of chunks:
//   prep   (chunk, head): γ = cumsum(max(g, −1000)) in double, A_ij = β_i (k_i·k_j) e^{γi−γj} (j < i), then the
//          forward substitution W_i = β_i e^{γi} k_i − Σ_{j<i} A_ij W_j, U_i = β_i v_i − Σ_{j<i} A_ij U_j, one column
//          per thread, in place in smem;
//   state  (sequence segment, head, 32-column slice): chunk after chunk with S in registers (delta_tile.cuh):
//          V'_i = U_i − W_iᵀS (over U in place), out_i = e^{γi} q_iᵀS, S ← e^{γL} S + Σ_j e^{γL−γj} k_j V'_jᵀ;
//   output (chunk, head): out_i += Σ_{j≤i} (q_i·k_j) e^{γi−γj} V'_j.
// The same math and order of terms as the CPU op (engine/backend/cpu/cpu_gdn.cpp delta_chunked).
#include <cuda_runtime.h>

#include "kernels/gdn/delta_tile.cuh"
#include "kernels/gdn/gdn.h"
#include "kernels/gdn/gdn_common.cuh"

namespace ninfer::kern {
namespace {

using namespace gdn;

constexpr int kC = kDeltaChunk;  // 64
constexpr int kChunkThreads = 256;
constexpr int kSub = 16;  // rows staged at a time by the state kernel

struct Workspace {
  double* gam;  // [tasks, nv, 64]
  float* wu;    // [tasks, nv, 64, dk + dv]: W | U (U replaced by V' in the state kernel)
};
__host__ __device__ inline Workspace split_workspace(void* base, int tasks, int nv) {
  Workspace w;
  w.gam = static_cast<double*>(base);
  w.wu = reinterpret_cast<float*>(w.gam + static_cast<int64_t>(tasks) * nv * kC);
  return w;
}

size_t prep_smem(int dk) { return kC * sizeof(double) + 2 * kC * sizeof(float) + (kC * kC + kC * (dk + 1)) * sizeof(float); }
size_t output_smem(int dk) { return kC * sizeof(double) + (kC * kC + kC * (dk + 1)) * sizeof(float); }

// Chunk rows [row0, row0 + L) of k (key head kh) → Ks [64][dk + 1], zero rows past L; γ → gam (thread 0).
__device__ void stage_keys_and_gamma(const DeltaRuleView& p, int row0, int L, int kh, int h, float* Ks, double* gam) {
  const int ld = p.dk + 1;
  for (int i = threadIdx.x; i < kC * p.dk; i += kChunkThreads) {
    const int j = i / p.dk, d = i % p.dk;
    Ks[j * ld + d] = j < L ? row3<const float>(p.k, row0 + j, kh)[d] : 0.0f;
  }
  if (threadIdx.x == 0) {
    double acc = 0.0;  // as the CPU: the clamp keeps γi − γj finite for −inf decays
    for (int i = 0; i < kC; ++i) {
      if (i < L) acc += fmax(-1000.0, static_cast<double>(row2<const float>(p.g, row0 + i)[h]));
      gam[i] = acc;
    }
  }
}

// Column x (stride ld, rows < L) ← (I + A)⁻¹ (β ⊙ [e^{γ}] ⊙ x): the right-hand side β_i·eg_i·x_i (eg null: β_i·x_i)
// as the CPU forms it, then x_i −= A_ij x_j for j < i in order; the rows go to dst (stride dst_ld) as well.
__device__ __forceinline__ void solve_column(const float* A, float* x, int ld, int L, const float* bet, const float* eg,
                                             float* dst, int dst_ld) {
  for (int i = 0; i < L; ++i) {
    float acc = eg ? bet[i] * eg[i] * x[i * ld] : bet[i] * x[i * ld];
    for (int j = 0; j < i; ++j) acc = fmaf(-A[i * kC + j], x[j * ld], acc);
    x[i * ld] = acc;
    dst[static_cast<int64_t>(i) * dst_ld] = acc;
  }
}

__global__ void __launch_bounds__(kChunkThreads) delta_prep_kernel(DeltaRuleView p, DeltaChunkTasks tk, Workspace ws) {
  extern __shared__ double smem_d[];
  double* gam = smem_d;
  float* bet = reinterpret_cast<float*>(gam + kC);
  float* eg = bet + kC;
  float* A = eg + kC;
  float* Ks = A + kC * kC;
  const int task = blockIdx.x, h = blockIdx.y, tid = threadIdx.x;
  const int row0 = tk.task_row0.data[task], L = tk.task_len.data[task], kh = h / (p.nv / p.nk);
  const int ld = p.dk + 1, width = p.dk + p.dv;
  stage_keys_and_gamma(p, row0, L, kh, h, Ks, gam);
  if (tid < kC) bet[tid] = tid < L ? row2<const float>(p.beta, row0 + tid)[h] : 0.0f;
  __syncthreads();
  const int64_t base = static_cast<int64_t>(task) * p.nv + h;
  if (tid < kC) {
    eg[tid] = static_cast<float>(exp(gam[tid]));
    ws.gam[base * kC + tid] = gam[tid];
  }
  for (int e = tid; e < kC * kC; e += kChunkThreads) {
    const int i = e / kC, j = e % kC;
    float a = 0.0f;
    if (j < i && i < L) {
      float dot = 0.0f;
      for (int d = 0; d < p.dk; ++d) dot = fmaf(Ks[i * ld + d], Ks[j * ld + d], dot);
      a = bet[i] * dot * static_cast<float>(exp(gam[i] - gam[j]));
    }
    A[e] = a;
  }
  __syncthreads();
  // Forward substitution, one column per thread, in place in smem (x_i = rhs_i − Σ_{j<i} A_ij x_j, j ascending;
  // the lanes walk (i, j) in step, so A_ij is a broadcast): the k columns in Ks itself, then the v columns in
  // blocks of ld staged over it.
  float* out = ws.wu + base * kC * width;
  for (int c = tid; c < p.dk; c += kChunkThreads) solve_column(A, Ks + c, ld, L, bet, eg, out + c, width);
  for (int vb = 0; vb < p.dv; vb += ld) {
    const int bw = min(ld, p.dv - vb);
    __syncthreads();  // the previous columns are done with Ks
    for (int e = tid; e < kC * bw; e += kChunkThreads) {
      const int i = e / bw, c = e % bw;
      Ks[i * ld + c] = i < L ? row3<const float>(p.v, row0 + i, h)[vb + c] : 0.0f;
    }
    __syncthreads();
    for (int c = tid; c < bw; c += kChunkThreads) solve_column(A, Ks + c, ld, L, bet, nullptr, out + p.dk + vb + c, width);
  }
}

template <int KT>
__global__ void __launch_bounds__(kTileThreads) delta_state_kernel(DeltaRuleView p, DeltaChunkTasks tk, Workspace ws,
                                                                   bool vec) {
  constexpr int DKP = StateTile<KT>::kRowsPadded;
  __shared__ float Xs[kSub][DKP], Ys[kSub][DKP], Vp[kC][kTileCols];
  __shared__ double gam[kC];
  const int seg = blockIdx.z, h = blockIdx.y, v0 = blockIdx.x * kTileCols, tid = threadIdx.x;
  const int kh = h / (p.nv / p.nk), width = p.dk + p.dv;
  const int vcol = (tid / kKThreads) * kColsPerThread;
  StateTile<KT> tile;
  tile.init(tid, v0);
  float* S = head_state(p, tk.seg_slot.data[seg], h);
  tile.load(S, p.dk, p.dv, vec);

  for (int task = tk.seg_first.data[seg]; task < tk.seg_first.data[seg + 1]; ++task) {
    const int row0 = tk.task_row0.data[task], L = tk.task_len.data[task];
    const int64_t base = static_cast<int64_t>(task) * p.nv + h;
    float* wu = ws.wu + base * kC * width;
    __syncthreads();  // the previous chunk is done with gam / Vp
    for (int i = tid; i < kC; i += kTileThreads) gam[i] = ws.gam[base * kC + i];
    // V'_i = U_i − W_iᵀ S and out_i = e^{γi} q_iᵀ S, 16 rows at a time
    for (int i0 = 0; i0 < L; i0 += kSub) {
      __syncthreads();
      for (int e = tid; e < kSub * DKP; e += kTileThreads) {
        const int j = e / DKP, d = e % DKP, i = i0 + j;
        const bool in = i < L && d < p.dk;
        Xs[j][d] = in ? wu[static_cast<int64_t>(i) * width + d] : 0.0f;
        Ys[j][d] = in ? row3<const float>(p.q, row0 + i, kh)[d] : 0.0f;
      }
      __syncthreads();
      for (int j = 0; j < kSub && i0 + j < L; ++j) {
        const int i = i0 + j;
        float ws_[kColsPerThread], qs_[kColsPerThread];
        tile.dot_rows(Xs[j], ws_);
        tile.dot_rows(Ys[j], qs_);
        const float e = static_cast<float>(exp(gam[i]));
        float* urow = wu + static_cast<int64_t>(i) * width + p.dk;
        float* orow = row3<float>(p.out, row0 + i, h);
        if (tile.kth == 0) {  // one lane per column reads U and writes V' over it
#pragma unroll
          for (int c = 0; c < kColsPerThread; ++c) {
            const int col = tile.col0 + c;
            const float vp = col < p.dv ? urow[col] - ws_[c] : 0.0f;
            Vp[i][vcol + c] = vp;
            if (col < p.dv) {
              urow[col] = vp;
              orow[col] = e * qs_[c];
            }
          }
        }
      }
    }
    __syncthreads();  // Vp complete
    // S ← e^{γL} S + Σ_j (e^{γL−γj} k_j) V'_jᵀ
    const double glast = gam[L - 1];
    const float eL = static_cast<float>(exp(glast));
#pragma unroll
    for (int r = 0; r < KT; ++r)
#pragma unroll
      for (int c = 0; c < kColsPerThread; ++c) tile.s[r][c] *= eL;
    for (int i0 = 0; i0 < L; i0 += kSub) {
      __syncthreads();
      for (int e = tid; e < kSub * DKP; e += kTileThreads) {
        const int j = e / DKP, d = e % DKP, i = i0 + j;
        Xs[j][d] = (i < L && d < p.dk)
                       ? static_cast<float>(exp(glast - gam[i])) * row3<const float>(p.k, row0 + i, kh)[d]
                       : 0.0f;
      }
      __syncthreads();
      for (int j = 0; j < kSub && i0 + j < L; ++j) {
#pragma unroll
        for (int r = 0; r < KT; ++r) {
          const float kd = Xs[j][r * kKThreads + tile.kth];
#pragma unroll
          for (int c = 0; c < kColsPerThread; ++c) tile.s[r][c] = fmaf(kd, Vp[i0 + j][vcol + c], tile.s[r][c]);
        }
      }
    }
  }
  tile.store(S, p.dk, p.dv, vec);
}

__global__ void __launch_bounds__(kChunkThreads) delta_output_kernel(DeltaRuleView p, DeltaChunkTasks tk, Workspace ws) {
  extern __shared__ double smem_d[];
  double* gam = smem_d;
  float* P = reinterpret_cast<float*>(gam + kC);
  float* Ks = P + kC * kC;
  const int task = blockIdx.x, h = blockIdx.y, tid = threadIdx.x;
  const int row0 = tk.task_row0.data[task], L = tk.task_len.data[task], kh = h / (p.nv / p.nk);
  const int ld = p.dk + 1, width = p.dk + p.dv;
  const int64_t base = static_cast<int64_t>(task) * p.nv + h;
  for (int i = threadIdx.x; i < kC * p.dk; i += kChunkThreads) {
    const int j = i / p.dk, d = i % p.dk;
    Ks[j * ld + d] = j < L ? row3<const float>(p.k, row0 + j, kh)[d] : 0.0f;
  }
  if (tid < kC) gam[tid] = ws.gam[base * kC + tid];
  __syncthreads();
  for (int e = tid; e < kC * kC; e += kChunkThreads) {
    const int i = e / kC, j = e % kC;  // the lanes of a warp share i: q_i is one broadcast load
    float w = 0.0f;
    if (j <= i && i < L) {
      const float* qi = row3<const float>(p.q, row0 + i, kh);
      float dot = 0.0f;
      for (int d = 0; d < p.dk; ++d) dot = fmaf(qi[d], Ks[j * ld + d], dot);
      w = dot * static_cast<float>(exp(gam[i] - gam[j]));
    }
    P[e] = w;
  }
  // out_i += Σ_{j≤i} P_ij V'_j, one column per thread over V' staged in blocks of ld columns (over Ks)
  const float* vp_rows = ws.wu + base * kC * width + p.dk;
  for (int vb = 0; vb < p.dv; vb += ld) {
    const int bw = min(ld, p.dv - vb);
    __syncthreads();  // P is complete / the previous block is done
    for (int e = tid; e < kC * bw; e += kChunkThreads) {
      const int j = e / bw, c = e % bw;
      Ks[j * ld + c] = j < L ? vp_rows[static_cast<int64_t>(j) * width + vb + c] : 0.0f;
    }
    __syncthreads();
    for (int c = tid; c < bw; c += kChunkThreads) {
      for (int i = 0; i < L; ++i) {
        float* o = row3<float>(p.out, row0 + i, h) + vb + c;
        float acc = *o;
        for (int j = 0; j <= i; ++j) acc = fmaf(P[i * kC + j], Ks[j * ld + c], acc);
        *o = acc;
      }
    }
  }
}

// Opts a kernel into more than 48 KiB of dynamic smem once per size.
template <typename K>
void allow_smem(K kernel, size_t bytes, size_t& allowed) {
  if (bytes <= 48 * 1024 || bytes <= allowed) return;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  allowed = bytes;
}

template <int KT>
void launch_state(cudaStream_t stream, const DeltaRuleView& p, const DeltaChunkTasks& tk, const Workspace& ws, bool vec) {
  const dim3 grid((p.dv + kTileCols - 1) / kTileCols, p.nv, tk.segments);
  delta_state_kernel<KT><<<grid, kTileThreads, 0, stream>>>(p, tk, ws, vec);
}

}  // namespace

size_t gdn_delta_chunk_workspace_bytes(int tasks, int nv, int dk, int dv) {
  const size_t n = static_cast<size_t>(tasks) * nv * kC;
  return n * sizeof(double) + n * static_cast<size_t>(dk + dv) * sizeof(float);
}

void gdn_delta_chunked(cudaStream_t stream, const DeltaRuleView& p, const DeltaChunkTasks& tk, void* workspace) {
  if (tk.tasks == 0 || p.nv == 0) return;
  const Workspace ws = split_workspace(workspace, tk.tasks, p.nv);
  static size_t prep_allowed = 0, output_allowed = 0;
  const size_t prep_bytes = prep_smem(p.dk), out_bytes = output_smem(p.dk);
  allow_smem(delta_prep_kernel, prep_bytes, prep_allowed);
  allow_smem(delta_output_kernel, out_bytes, output_allowed);
  const dim3 grid(tk.tasks, p.nv);
  delta_prep_kernel<<<grid, kChunkThreads, prep_bytes, stream>>>(p, tk, ws);
  const bool vec = p.dv % 4 == 0 && reinterpret_cast<uintptr_t>(p.state) % 16 == 0;
  if (p.dk <= 16) launch_state<2>(stream, p, tk, ws, vec);
  else if (p.dk <= 32) launch_state<4>(stream, p, tk, ws, vec);
  else if (p.dk <= 64) launch_state<8>(stream, p, tk, ws, vec);
  else launch_state<16>(stream, p, tk, ws, vec);
  if (p.dv > 0) delta_output_kernel<<<grid, kChunkThreads, out_bytes, stream>>>(p, tk, ws);
}

}  // namespace ninfer::kern
