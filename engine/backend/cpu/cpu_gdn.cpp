// Gated DeltaNet ops of the CPU backend: causal conv1d with carried state, gated delta rule (recurrent + chunked).
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/backend/checks/gdn_checks.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/cpu_workspace.h"
#include "engine/core/error.h"

namespace ninfer::cpu {

namespace {

constexpr int64_t kChunk = 64;            // delta-rule chunk length (as FLA / transformers)
constexpr int64_t kConvChannelBlock = 256;
constexpr int64_t kTriRows = 6;          // row blocks of the chunk's triangular products (gemm_nn's AVX2 tile rows)


// The checkpoint slot of row r, or −1.
inline int32_t checkpoint_of(const SeqBatch& batch, int64_t r) {
  return batch.checkpoint_slot.empty() ? -1 : batch.checkpoint_slot[static_cast<size_t>(r)];
}

}  // namespace

void CpuBackend::conv1d(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& state, const SeqBatch& batch,
                        bool silu_act) {
  const int64_t K = check_conv1d(out, x, w, state, batch, Device::kCpu);
  const int64_t C = x.dim(1);
  const int64_t S = batch.num_seqs();
  const int64_t cblocks = (C + kConvChannelBlock - 1) / kConvChannelBlock;
  pool_.parallel_for(cblocks, [&](int64_t task, int thread) {
    const int64_t c0 = task * kConvChannelBlock, c1 = std::min(C, c0 + kConvChannelBlock), B = c1 - c0;
    // This block's taps as f32 [K, B], converted once for all sequences, so that the inner loop runs over contiguous
    // channels (a decode step's conv is a few µs of arithmetic: converting taps one channel at a time cost more).
    float* wt = scratch(thread, static_cast<size_t>(K * B));
    k_->transpose_to_f32(w.at(c0), w.dtype, w.stride[0], B, K, wt, B);
    for (int64_t s = 0; s < S; ++s) {
      const int64_t r0 = batch.q_start[static_cast<size_t>(s)], n = batch.q_start[static_cast<size_t>(s + 1)] - r0;
      if (n == 0) continue;
      float* st = static_cast<float*>(state.at(batch.state_slot[static_cast<size_t>(s)]));  // [K-1, C]
      auto src = [&](int64_t i) -> const float* {  // window row i of concat(state, x); i in [0, K-1+n)
        return i < K - 1 ? st + i * C : row_f32(x, r0 + i - (K - 1));
      };
      for (int64_t t = 0; t < n; ++t) {
        float* o = row_f32(out, r0 + t);
        for (int64_t c = c0; c < c1; ++c) o[c] = 0.0f;
        for (int64_t j = 0; j < K; ++j) {
          const float* in = src(t + j) + c0;
          const float* wj = wt + j * B;
          for (int64_t c = 0; c < B; ++c) o[c0 + c] += wj[c] * in[c];
        }
        if (silu_act) k_->silu_mul(o + c0, nullptr, o + c0, B);
        if (const int32_t ck = checkpoint_of(batch, r0 + t); ck >= 0) {  // the state had the sequence ended at row t
          float* cs = static_cast<float*>(state.at(ck));
          for (int64_t i = 0; i < K - 1; ++i) {
            const float* from = src(t + 1 + i);
            std::copy(from + c0, from + c1, cs + i * C + c0);
          }
        }
      }
      // new state: the last K-1 rows of the window (ascending copy is safe: the source index is >= the target)
      for (int64_t i = 0; i < K - 1; ++i) {
        const float* from = src(i + n);
        if (from != st + i * C) std::copy(from + c0, from + c1, st + i * C + c0);
      }
    }
  });
}

namespace {

struct DeltaArgs {
  const Tensor *out, *q, *k, *v, *g, *beta;
  int64_t dk, dv, group;
  const Tensor* state;   // for checkpoints
  const SeqBatch* batch;
};

// Recurrent form over rows [r0, r1) of value head h with state S [dk, dv]: one delta_step per row (tmp: 2·dv floats).
void delta_recurrent(const Kernels& kr, const DeltaArgs& a, int64_t h, int64_t r0, int64_t r1, float* S, float* tmp) {
  const int64_t dk = a.dk, dv = a.dv, kh = h / a.group;
  for (int64_t r = r0; r < r1; ++r) {
    const float* qv = static_cast<const float*>(a.q->at(r, kh));
    const float* kv = static_cast<const float*>(a.k->at(r, kh));
    const float* vv = static_cast<const float*>(a.v->at(r, h));
    const float decay = std::exp(static_cast<const float*>(a.g->at(r))[h]);
    const float b = static_cast<const float*>(a.beta->at(r))[h];
    kr.delta_step(S, dk, dv, kv, qv, vv, decay, b, static_cast<float*>(a.out->at(r, h)), tmp);
    if (const int32_t ck = checkpoint_of(*a.batch, r); ck >= 0)
      kr.stream_copy(static_cast<float*>(a.state->at(ck, h)), S, dk * dv);
  }
}

// Chunked (WY / UT transform) form, chunks of kChunk rows; same math as transformers' torch_chunk_gated_delta_rule
// without padding (a partial last chunk is exact as it is). Per chunk of L rows (K, Q [L, dk], V [L, dv], γ the
// cumulative log decay, S [dk, dv]) nearly everything is a small in-cache product (gemm_nn):
//   (I + A) [U | W] = [β v | β e^γ k], A_ij = β_i (k_i·k_j) e^{γi−γj} for j < i (blocked forward substitution)
//   V' = U − W S          O = diag(e^γ) Q S + ((Q Kᵀ) ⊙ e^{γi−γj}, j ≤ i) V'
//   S ← e^{γL} S + (e^{γL−γj} k_j)ᵀ V'
void delta_chunked(const Kernels& kr, const DeltaArgs& a, int64_t h, int64_t r0, int64_t r1, float* S, float* mem) {
  const int64_t dk = a.dk, dv = a.dv, kh = h / a.group, C = kChunk, E = dv + dk;
  double* gam = reinterpret_cast<double*>(mem);  // [C] cumulative log decay (double: exp of differences)
  float* Kt = mem + 2 * C;                       // [dk, C] (e^{γL−γj} k_j)ᵀ
  float* T = Kt + dk * C;                        // [C, C] K Kᵀ, then −A
  float* P = T + C * C;                          // [C, C] Q Kᵀ, then its decayed lower triangle
  float* D = P + C * C;                          // [C, C] e^{γi−γj} for j ≤ i
  float* UW = D + C * C;                         // [C, E] [β v | β e^γ k], then [U | W], then [V' | −W]
  const int64_t qs = a.q->stride[0], ks = a.k->stride[0], os = a.out->stride[0];
  for (int64_t c0 = r0; c0 < r1; c0 += C) {
    const int64_t L = std::min(C, r1 - c0);
    const float* Q = static_cast<const float*>(a.q->at(c0, kh));
    const float* K = static_cast<const float*>(a.k->at(c0, kh));
    float* O = static_cast<float*>(a.out->at(c0, h));
    auto beta = [&](int64_t i) { return static_cast<const float*>(a.beta->at(c0 + i))[h]; };
    // g is clamped at −1000: exp(−1000) is already 0 in f32 and f64, and the clamp keeps γ_i − γ_j exact for
    // huge or infinite decays (−inf − −inf would be NaN).
    double acc = 0.0;
    for (int64_t i = 0; i < L; ++i) {
      acc += std::max(-1000.0, double(static_cast<const float*>(a.g->at(c0 + i))[h]));
      gam[i] = acc;
    }
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j <= i; ++j) D[i * C + j] = static_cast<float>(std::exp(gam[i] - gam[j]));
    // K Kᵀ and Q Kᵀ (j ≤ i) as dots: their lane-split sums are more accurate than one k-order chain, and the two
    // forms of the rule (the recurrent one dots too) stay closest.
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        T[i * C + j] = kr.dot(K + i * ks, K + j * ks, dk);
        P[i * C + j] = kr.dot(Q + i * qs, K + j * ks, dk);
      }
    // The other triangular products in blocks of kTriRows rows, each only as deep as its last row needs.
    auto lower = [&](int64_t i0) { return std::min(L, i0 + kTriRows); };
    // −A in place of K Kᵀ (strictly lower), [β v | β e^γ k] into UW
    for (int64_t i = 0; i < L; ++i) {
      const float bi = beta(i), e = static_cast<float>(std::exp(gam[i]));
      float* Ai = T + i * C;
      for (int64_t j = 0; j < i; ++j) Ai[j] = -bi * Ai[j] * D[i * C + j];
      const float* vi = static_cast<const float*>(a.v->at(c0 + i, h));
      const float* ki = K + i * ks;
      float* Ui = UW + i * E;
      for (int64_t d = 0; d < dv; ++d) Ui[d] = bi * vi[d];
      for (int64_t d = 0; d < dk; ++d) Ui[dv + d] = bi * e * ki[d];
    }
    // Forward substitution [U | W]_i = [βv | βe^γk]_i − Σ_{j<i} A_ij [U | W]_j, by row blocks: the rows before the
    // block in one product, then within the block; every row's terms are still added in j order.
    for (int64_t i0 = 0; i0 < L; i0 += kTriRows) {
      const int64_t i1 = lower(i0);
      if (i0 > 0) kr.gemm_nn(T + i0 * C, C, UW, E, UW + i0 * E, E, i1 - i0, E, i0, true);
      for (int64_t i = i0 + 1; i < i1; ++i)
        for (int64_t j = i0; j < i; ++j) kr.axpy(T[i * C + j], UW + j * E, UW + i * E, E);
    }
    for (int64_t i = 0; i < L; ++i) kr.scale(-1.0f, UW + i * E + dv, dk);
    kr.gemm_nn(UW + dv, E, S, dv, UW, E, L, dv, dk, true);  // V' = U − W S
    kr.gemm_nn(Q, qs, S, dv, O, os, L, dv, dk, false);      // Q S
    for (int64_t i = 0; i < L; ++i) {
      kr.scale(static_cast<float>(std::exp(gam[i])), O + i * os, dv);
      float* Pi = P + i * C;
      for (int64_t j = 0; j <= i; ++j) Pi[j] *= D[i * C + j];
      std::fill(Pi + i + 1, Pi + C, 0.0f);
    }
    for (int64_t i0 = 0; i0 < L; i0 += kTriRows)  // + masked decayed (Q Kᵀ) V'
      kr.gemm_nn(P + i0 * C, C, UW, E, O + i0 * os, os, lower(i0) - i0, dv, lower(i0), true);
    const int64_t last = L - 1;
    kr.scale(static_cast<float>(std::exp(gam[last])), S, dk * dv);
    for (int64_t j = 0; j < L; ++j)
      for (int64_t d = 0; d < dk; ++d) Kt[d * C + j] = K[j * ks + d] * D[last * C + j];
    kr.gemm_nn(Kt, C, UW, E, S, dv, dk, dv, L, true);  // S += (e^{γL−γj} k_j)ᵀ V'
  }
}

}  // namespace

size_t chunk_scratch_floats(int64_t dk, int64_t dv) {
  const int64_t C = kChunk, E = dv + dk;
  return static_cast<size_t>(2 * C + dk * C + 3 * C * C + C * E);
}

void CpuBackend::gated_delta_rule(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                                  const Tensor& beta, const Tensor& state, const SeqBatch& batch, DeltaRuleAlgo algo) {
  const DeltaRuleDims d = check_gated_delta_rule(out, q, k, v, g, beta, state, batch, Device::kCpu);
  const int64_t nk = d.nk, dk = d.dk, nv = d.nv, dv = d.dv;
  const DeltaArgs args{&out, &q, &k, &v, &g, &beta, dk, dv, nv / nk, &state, &batch};
  const int64_t S = batch.num_seqs();
  const size_t chunk_mem = chunk_scratch_floats(dk, dv);
  pool_.parallel_for(S * nv, [&](int64_t task, int thread) {
    const int64_t s = task / nv, h = task % nv;
    const int64_t r0 = batch.q_start[static_cast<size_t>(s)], r1 = batch.q_start[static_cast<size_t>(s + 1)];
    if (r1 == r0) return;
    float* St = static_cast<float*>(state.at(batch.state_slot[static_cast<size_t>(s)], h));
    bool checkpoints = false;
    for (int64_t r = r0; r < r1 && !checkpoints && !batch.checkpoint_slot.empty(); ++r) checkpoints = checkpoint_of(batch, r) >= 0;
    const bool chunked = !checkpoints && (algo == DeltaRuleAlgo::kChunked ||
                                          (algo == DeltaRuleAlgo::kAuto && r1 - r0 >= kDeltaRuleAutoChunkedMin));
    if (chunked) {
      delta_chunked(*k_, args, h, r0, r1, St, scratch(thread, chunk_mem));
    } else {
      delta_recurrent(*k_, args, h, r0, r1, St, scratch(thread, static_cast<size_t>(2 * dv)));
    }
  });
}

}  // namespace ninfer::cpu
