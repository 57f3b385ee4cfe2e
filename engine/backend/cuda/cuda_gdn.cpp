// The CUDA backend's Gated-DeltaNet ops: causal conv1d with state, gating, the gated delta rule (kernels/gdn/).
#include <algorithm>
#include <vector>

#include "engine/backend/checks/gdn_checks.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/op_checks.h"
#include "engine/core/error.h"
#include "kernels/gdn/gdn.h"

namespace ninfer::cuda {

namespace {

constexpr size_t kChunkWindowBytes = size_t{64} << 20;     // chunked-form scratch per window of chunks

}  // namespace

void CudaBackend::conv1d(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& state, const SeqBatch& batch,
                         bool silu) {
  const int64_t K = check_conv1d(out, x, w, state, batch, Device::kCuda);
  if (batch.num_seqs() == 0 || x.dim(1) == 0) return;
  const kern::I32Span q_start = upload(batch.q_start), slots = upload(batch.state_slot);
  const kern::I32Span ck = upload(batch.checkpoint_slot);
  kern::gdn_conv1d(stream(), rows_of(out), rows_of(x), rows_of(w), static_cast<float*>(state.data), K, q_start, slots,
                   ck, silu);
  after_launch("conv1d");
}

void CudaBackend::gdn_gating(const Tensor& g, const Tensor& beta, const Tensor& a, const Tensor& b, const Tensor& A_log,
                             const Tensor& dt_bias) {
  check_gdn_gating(g, beta, a, b, A_log, dt_bias, Device::kCuda);
  if (a.numel() == 0) return;
  kern::gdn_gating(stream(), rows_of(g), rows_of(beta), rows_of(a), rows_of(b), rows_of(A_log), rows_of(dt_bias));
  after_launch("gdn_gating");
}

void CudaBackend::gated_delta_rule(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                                   const Tensor& beta, const Tensor& state, const SeqBatch& batch, DeltaRuleAlgo algo) {
  const DeltaRuleDims d = check_gated_delta_rule(out, q, k, v, g, beta, state, batch, Device::kCuda);
  if (d.dk > kern::kDeltaMaxDk)
    fail(ErrorKind::kUnsupported, "gated_delta_rule: key head dim {} above the CUDA kernels' {} (q {})", d.dk,
         kern::kDeltaMaxDk, q.describe());
  if (d.T == 0 || d.nv == 0 || d.dv == 0) return;

  // Per sequence: recurrent (any checkpoint row, kRecurrent, kAuto below the threshold) or chunked.
  const int64_t S = batch.num_seqs();
  std::vector<int32_t> recurrent;
  std::vector<int32_t> task_row0, task_len, task_seq;
  for (int64_t s = 0; s < S; ++s) {
    const int32_t r0 = batch.q_start[static_cast<size_t>(s)], r1 = batch.q_start[static_cast<size_t>(s + 1)];
    if (r1 == r0) continue;
    bool checkpoints = false;
    for (int32_t r = r0; r < r1 && !batch.checkpoint_slot.empty() && !checkpoints; ++r)
      checkpoints = batch.checkpoint_slot[static_cast<size_t>(r)] >= 0;
    const bool chunked = !checkpoints && (algo == DeltaRuleAlgo::kChunked ||
                                          (algo == DeltaRuleAlgo::kAuto && r1 - r0 >= kDeltaRuleAutoChunkedMin));
    if (!chunked) {
      recurrent.push_back(static_cast<int32_t>(s));
      continue;
    }
    for (int32_t c0 = r0; c0 < r1; c0 += kern::kDeltaChunk) {
      task_row0.push_back(c0);
      task_len.push_back(std::min<int32_t>(kern::kDeltaChunk, r1 - c0));
      task_seq.push_back(static_cast<int32_t>(s));
    }
  }

  kern::DeltaRuleView p;
  p.q = rows_of(q);
  p.k = rows_of(k);
  p.v = rows_of(v);
  p.out = rows_of(out);
  p.g = rows_of(g);
  p.beta = rows_of(beta);
  p.state = static_cast<float*>(state.data);
  p.nk = static_cast<int>(d.nk);
  p.nv = static_cast<int>(d.nv);
  p.dk = static_cast<int>(d.dk);
  p.dv = static_cast<int>(d.dv);
  p.q_start = upload(batch.q_start);
  p.state_slot = upload(batch.state_slot);
  p.checkpoint_slot = upload(batch.checkpoint_slot);

  if (!recurrent.empty()) {
    kern::gdn_delta_recurrent(stream(), p, upload(recurrent));
    after_launch("gated_delta_rule");
  }
  if (task_row0.empty()) return;

  // Chunked: windows of at most `per_window` chunks (bounded scratch); a window's consecutive chunks of one
  // sequence form a segment whose state the state kernel carries in registers.
  const size_t per_task = kern::gdn_delta_chunk_workspace_bytes(1, p.nv, p.dk, p.dv);
  const int per_window = static_cast<int>(std::max<size_t>(1, kChunkWindowBytes / per_task));
  const int ntasks = static_cast<int>(task_row0.size());
  void* ws = workspace("gated_delta_rule.chunks",
                       kern::gdn_delta_chunk_workspace_bytes(std::min(per_window, ntasks), p.nv, p.dk, p.dv));
  // Every window's host arrays stay alive until the op returns (upload copies them at once anyway).
  std::vector<std::vector<int32_t>> seg_first_all, seg_slot_all;
  for (int t0 = 0; t0 < ntasks; t0 += per_window) {
    const int t1 = std::min(ntasks, t0 + per_window);
    std::vector<int32_t>& seg_first = seg_first_all.emplace_back();
    std::vector<int32_t>& seg_slot = seg_slot_all.emplace_back();
    for (int t = t0; t < t1; ++t)
      if (t == t0 || task_seq[static_cast<size_t>(t)] != task_seq[static_cast<size_t>(t - 1)]) {
        seg_first.push_back(t - t0);
        seg_slot.push_back(batch.state_slot[static_cast<size_t>(task_seq[static_cast<size_t>(t)])]);
      }
    seg_first.push_back(t1 - t0);
    kern::DeltaChunkTasks tk;
    tk.task_row0 = upload(std::span<const int32_t>(task_row0).subspan(static_cast<size_t>(t0), static_cast<size_t>(t1 - t0)));
    tk.task_len = upload(std::span<const int32_t>(task_len).subspan(static_cast<size_t>(t0), static_cast<size_t>(t1 - t0)));
    tk.seg_first = upload(seg_first);
    tk.seg_slot = upload(seg_slot);
    tk.tasks = t1 - t0;
    tk.segments = static_cast<int>(seg_slot.size());
    kern::gdn_delta_chunked(stream(), p, tk, ws);
    after_launch("gated_delta_rule");
  }
}

}  // namespace ninfer::cuda
