// Gated DeltaNet ops of the CPU backend: causal conv1d with carried state, gated delta rule (recurrent + chunked).
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/backend/checks/gdn_checks.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/core/error.h"

namespace ninfer::cpu {

namespace {

constexpr int64_t kChunk = 64;            // delta-rule chunk length (as FLA / transformers)
constexpr int64_t kAutoChunkedMin = 16;   // kAuto: chunked form from this many tokens of one sequence
constexpr int64_t kConvChannelBlock = 256;

inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

// The checkpoint slot of row r, or −1.
inline int32_t checkpoint_of(const SeqBatch& batch, int64_t r) {
  return batch.checkpoint_slot.empty() ? -1 : batch.checkpoint_slot[static_cast<size_t>(r)];
}

}  // namespace

void CpuBackend::conv1d(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& state, const SeqBatch& batch,
                        bool silu_act) {
  const int64_t K = check_conv1d(out, x, w, state, batch, Device::kCpu);
  const int64_t C = x.dim(1);
  // taps transposed to [K, C] f32 so the inner loop runs over contiguous channels
  std::vector<float> wt(static_cast<size_t>(K * C)), row(static_cast<size_t>(K));
  for (int64_t c = 0; c < C; ++c) {
    k_->to_f32(w.at(c), w.dtype, row.data(), K);
    for (int64_t j = 0; j < K; ++j) wt[static_cast<size_t>(j * C + c)] = row[static_cast<size_t>(j)];
  }
  const int64_t S = batch.num_seqs();
  const int64_t cblocks = (C + kConvChannelBlock - 1) / kConvChannelBlock;
  pool_.parallel_for(S * cblocks, [&](int64_t task, int) {
    const int64_t s = task / cblocks, c0 = (task % cblocks) * kConvChannelBlock, c1 = std::min(C, c0 + kConvChannelBlock);
    const int64_t r0 = batch.q_start[static_cast<size_t>(s)], n = batch.q_start[static_cast<size_t>(s + 1)] - r0;
    float* st = static_cast<float*>(state.at(batch.state_slot[static_cast<size_t>(s)]));  // [K-1, C]
    auto src = [&](int64_t i) -> const float* {  // window row i of concat(state, x); i in [0, K-1+n)
      return i < K - 1 ? st + i * C : row_f32(x, r0 + i - (K - 1));
    };
    for (int64_t t = 0; t < n; ++t) {
      float* o = row_f32(out, r0 + t);
      for (int64_t c = c0; c < c1; ++c) o[c] = 0.0f;
      for (int64_t j = 0; j < K; ++j) {
        const float* in = src(t + j);
        const float* wj = wt.data() + j * C;
        for (int64_t c = c0; c < c1; ++c) o[c] += wj[c] * in[c];
      }
      if (silu_act)
        for (int64_t c = c0; c < c1; ++c) o[c] = silu(o[c]);
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
  });
}

namespace {

struct DeltaArgs {
  const Tensor *out, *q, *k, *v, *g, *beta;
  int64_t dk, dv, group;
  const Tensor* state;   // for checkpoints
  const SeqBatch* batch;
};

// Recurrent form over rows [r0, r1) of value head h with state S [dk, dv].
void delta_recurrent(const Kernels& kr, const DeltaArgs& a, int64_t h, int64_t r0, int64_t r1, float* S, float* tmp) {
  const int64_t dk = a.dk, dv = a.dv, kh = h / a.group;
  for (int64_t r = r0; r < r1; ++r) {
    const float* qv = static_cast<const float*>(a.q->at(r, kh));
    const float* kv = static_cast<const float*>(a.k->at(r, kh));
    const float* vv = static_cast<const float*>(a.v->at(r, h));
    const float decay = std::exp(static_cast<const float*>(a.g->at(r))[h]);
    const float b = static_cast<const float*>(a.beta->at(r))[h];
    float* mem = tmp;  // Sᵀk after the decay
    std::fill(mem, mem + dv, 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
      kr.scale(decay, S + i * dv, dv);
      kr.axpy(kv[i], S + i * dv, mem, dv);
    }
    for (int64_t j = 0; j < dv; ++j) mem[j] = b * (vv[j] - mem[j]);  // u
    float* o = static_cast<float*>(a.out->at(r, h));
    std::fill(o, o + dv, 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
      kr.axpy(kv[i], mem, S + i * dv, dv);
      kr.axpy(qv[i], S + i * dv, o, dv);
    }
    if (const int32_t ck = checkpoint_of(*a.batch, r); ck >= 0)
      std::copy(S, S + dk * dv, static_cast<float*>(a.state->at(ck, h)));
  }
}

// Chunked (WY / UT transform) form, chunks of kChunk rows; same math as transformers' torch_chunk_gated_delta_rule
// without padding (a partial last chunk is exact as it is).
void delta_chunked(const Kernels& kr, const DeltaArgs& a, int64_t h, int64_t r0, int64_t r1, float* S, float* mem) {
  const int64_t dk = a.dk, dv = a.dv, kh = h / a.group, C = kChunk;
  double* gam = reinterpret_cast<double*>(mem);  // [C] cumulative log decay (double: exp of differences)
  float* A = mem + 2 * C;                        // [C, C] strictly lower: beta_i (k_i·k_j) e^{γi−γj}
  float* U = A + C * C;                          // [C, dv]  then V' = U − W S
  float* W = U + C * dv;                         // [C, dk]
  float* qs = W + C * dk;                        // [dv] scratch
  for (int64_t c0 = r0; c0 < r1; c0 += C) {
    const int64_t L = std::min(C, r1 - c0);
    auto qrow = [&](int64_t i) { return static_cast<const float*>(a.q->at(c0 + i, kh)); };
    auto krow = [&](int64_t i) { return static_cast<const float*>(a.k->at(c0 + i, kh)); };
    auto vrow = [&](int64_t i) { return static_cast<const float*>(a.v->at(c0 + i, h)); };
    auto beta = [&](int64_t i) { return static_cast<const float*>(a.beta->at(c0 + i))[h]; };
    // g is clamped at −1000: exp(−1000) is already 0 in f32 and f64, and the clamp keeps γ_i − γ_j exact for
    // huge or infinite decays (−inf − −inf would be NaN).
    double acc = 0.0;
    for (int64_t i = 0; i < L; ++i) {
      acc += std::max(-1000.0, double(static_cast<const float*>(a.g->at(c0 + i))[h]));
      gam[i] = acc;
    }
    // U_i = β_i v_i − Σ_{j<i} A_ij U_j;  W_i = β_i e^{γ_i} k_i − Σ_{j<i} A_ij W_j   (forward substitution)
    for (int64_t i = 0; i < L; ++i) {
      const float bi = beta(i);
      const float* ki = krow(i);
      float* Ui = U + i * dv;
      float* Wi = W + i * dk;
      const float* vi = vrow(i);
      for (int64_t d = 0; d < dv; ++d) Ui[d] = bi * vi[d];
      const float e = static_cast<float>(std::exp(gam[i]));
      for (int64_t d = 0; d < dk; ++d) Wi[d] = bi * e * ki[d];
      for (int64_t j = 0; j < i; ++j) {
        const float aij = bi * kr.dot(ki, krow(j), dk) * static_cast<float>(std::exp(gam[i] - gam[j]));
        A[i * C + j] = aij;
        kr.axpy(-aij, U + j * dv, Ui, dv);
        kr.axpy(-aij, W + j * dk, Wi, dk);
      }
    }
    // V'_i = U_i − W_iᵀ S  (in place in U)
    for (int64_t i = 0; i < L; ++i) {
      float* Ui = U + i * dv;
      const float* Wi = W + i * dk;
      for (int64_t d = 0; d < dk; ++d) kr.axpy(-Wi[d], S + d * dv, Ui, dv);
    }
    // O_i = e^{γ_i} q_iᵀ S + Σ_{j≤i} (q_i·k_j) e^{γ_i−γ_j} V'_j
    for (int64_t i = 0; i < L; ++i) {
      const float* qi = qrow(i);
      float* o = static_cast<float*>(a.out->at(c0 + i, h));
      std::fill(qs, qs + dv, 0.0f);
      for (int64_t d = 0; d < dk; ++d) kr.axpy(qi[d], S + d * dv, qs, dv);
      const float e = static_cast<float>(std::exp(gam[i]));
      for (int64_t d = 0; d < dv; ++d) o[d] = e * qs[d];
      for (int64_t j = 0; j <= i; ++j) {
        const float w = kr.dot(qi, krow(j), dk) * static_cast<float>(std::exp(gam[i] - gam[j]));
        kr.axpy(w, U + j * dv, o, dv);
      }
    }
    // S ← e^{γ_last} S + Σ_j (e^{γ_last−γ_j} k_j) V'_jᵀ
    const double glast = gam[L - 1];
    kr.scale(static_cast<float>(std::exp(glast)), S, dk * dv);
    for (int64_t j = 0; j < L; ++j) {
      const float* kj = krow(j);
      const float e = static_cast<float>(std::exp(glast - gam[j]));
      for (int64_t d = 0; d < dk; ++d) kr.axpy(e * kj[d], U + j * dv, S + d * dv, dv);
    }
  }
}

}  // namespace

void CpuBackend::gated_delta_rule(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                                  const Tensor& beta, const Tensor& state, const SeqBatch& batch, DeltaRuleAlgo algo) {
  const DeltaRuleDims d = check_gated_delta_rule(out, q, k, v, g, beta, state, batch, Device::kCpu);
  const int64_t nk = d.nk, dk = d.dk, nv = d.nv, dv = d.dv;
  const DeltaArgs args{&out, &q, &k, &v, &g, &beta, dk, dv, nv / nk, &state, &batch};
  const int64_t S = batch.num_seqs();
  const size_t chunk_mem = static_cast<size_t>(2 * kChunk + kChunk * kChunk + kChunk * (dv + dk) + dv);
  pool_.parallel_for(S * nv, [&](int64_t task, int thread) {
    const int64_t s = task / nv, h = task % nv;
    const int64_t r0 = batch.q_start[static_cast<size_t>(s)], r1 = batch.q_start[static_cast<size_t>(s + 1)];
    if (r1 == r0) return;
    float* St = static_cast<float*>(state.at(batch.state_slot[static_cast<size_t>(s)], h));
    bool checkpoints = false;
    for (int64_t r = r0; r < r1 && !checkpoints && !batch.checkpoint_slot.empty(); ++r) checkpoints = checkpoint_of(batch, r) >= 0;
    const bool chunked = !checkpoints && (algo == DeltaRuleAlgo::kChunked ||
                                          (algo == DeltaRuleAlgo::kAuto && r1 - r0 >= kAutoChunkedMin));
    if (chunked) {
      delta_chunked(*k_, args, h, r0, r1, St, scratch(thread, chunk_mem));
    } else {
      delta_recurrent(*k_, args, h, r0, r1, St, scratch(thread, static_cast<size_t>(dv)));
    }
  });
}

}  // namespace ninfer::cpu
