// Owns the Gated-DeltaNet kernel launchers (kernels/gdn/): causal conv1d with carried state, gdn gating, and the
// gated delta rule in recurrent form and in the chunked (WY/UT) form.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/kview.h"

namespace ninfer::kern {

// ---- conv1d (conv1d.cu) ----
// out, x [T, C] f32 rows; w [C, K] (or [C, 1, K]) rows f32/bf16/f16; state [slots, K−1, C] f32 contiguous;
// q_start [S+1], state_slot [S], checkpoint_slot [T] or empty (n = 0), all on the device and already checked.
void gdn_conv1d(cudaStream_t stream, const Rows& out, const Rows& x, const Rows& w, float* state, int64_t K,
                const I32Span& q_start, const I32Span& state_slot, const I32Span& checkpoint_slot, bool silu);

// ---- gdn_gating (gating.cu) ----
// g, beta, a, b [T, nv] f32 rows; A_log, dt_bias [nv] (one row) f32/bf16/f16.
void gdn_gating(cudaStream_t stream, const Rows& g, const Rows& beta, const Rows& a, const Rows& b, const Rows& A_log,
                const Rows& dt_bias);

// ---- gated delta rule ----
// q, k [T, nk, dk] and v, out [T, nv, dv] as rows with two leading dims (T, heads); g, beta [T, nv] rows;
// state [slots, nv, dk, dv] f32 contiguous.
struct DeltaRuleView {
  Rows q, k, v, out, g, beta;
  float* state = nullptr;
  int nk = 0, nv = 0, dk = 0, dv = 0;
  I32Span q_start, state_slot, checkpoint_slot;  // checkpoint_slot.n == 0: none
};
// The largest key head dim the kernels take.
constexpr int kDeltaMaxDk = 128;
// Rows of one chunk of the chunked form.
constexpr int kDeltaChunk = 64;

// Recurrent form for the sequences listed in `seqs` (indices into q_start/state_slot, each with ≥ 1 row).
void gdn_delta_recurrent(cudaStream_t stream, const DeltaRuleView& p, const I32Span& seqs);

// One window of the chunked form: `tasks` chunks of ≤ kDeltaChunk rows (task i starts at row task_row0[i] and has
// task_len[i] rows), grouped in segments of consecutive chunks of one sequence (segment j: tasks
// [seg_first[j], seg_first[j+1]), state row seg_slot[j]); a segment's state is read at its start and written at its
// end, so a sequence may continue in the next window.
struct DeltaChunkTasks {
  I32Span task_row0, task_len, seg_first, seg_slot;
  int tasks = 0, segments = 0;
};
// Device scratch one window of `tasks` chunks needs (8-byte aligned parts).
size_t gdn_delta_chunk_workspace_bytes(int tasks, int nv, int dk, int dv);
void gdn_delta_chunked(cudaStream_t stream, const DeltaRuleView& p, const DeltaChunkTasks& tasks, void* workspace);

}  // namespace ninfer::kern
