#include "engine/backend/checks/gdn_checks.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "engine/backend/op_checks.h"
#include "engine/core/error.h"

namespace ninfer {

void check_state_slots(const char* op, const SeqBatch& batch, int64_t slots) {
  if (static_cast<int64_t>(batch.state_slot.size()) != batch.num_seqs())
    fail(ErrorKind::kInvalidArgument, "{}: {} sequences but {} state slots", op, batch.num_seqs(), batch.state_slot.size());
  for (size_t s = 0; s < batch.state_slot.size(); ++s) {
    const int32_t slot = batch.state_slot[s];
    if (slot < 0 || slot >= slots)
      fail(ErrorKind::kInvalidArgument, "{}: sequence {} state slot {} outside [0, {})", op, s, slot, slots);
    for (size_t o = 0; o < s; ++o)
      if (batch.state_slot[o] == slot)
        fail(ErrorKind::kInvalidArgument, "{}: sequences {} and {} share state slot {}", op, o, s, slot);
  }
  if (batch.checkpoint_slot.empty()) return;
  const int64_t T = batch.q_start.back();
  if (static_cast<int64_t>(batch.checkpoint_slot.size()) != T)
    fail(ErrorKind::kInvalidArgument, "{}: {} checkpoint slots for {} rows", op, batch.checkpoint_slot.size(), T);
  std::vector<int32_t> used;
  for (int64_t t = 0; t < T; ++t) {
    const int32_t c = batch.checkpoint_slot[static_cast<size_t>(t)];
    if (c < 0) continue;
    if (c >= slots) fail(ErrorKind::kInvalidArgument, "{}: row {} checkpoint slot {} outside [0, {})", op, t, c, slots);
    if (std::find(batch.state_slot.begin(), batch.state_slot.end(), c) != batch.state_slot.end())
      fail(ErrorKind::kInvalidArgument, "{}: row {} checkpoint slot {} is a sequence's state slot", op, t, c);
    used.push_back(c);
  }
  std::sort(used.begin(), used.end());
  if (std::adjacent_find(used.begin(), used.end()) != used.end())
    fail(ErrorKind::kInvalidArgument, "{}: two rows share checkpoint slot {}", op, *std::adjacent_find(used.begin(), used.end()));
}

int64_t check_conv1d(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& state, const SeqBatch& batch,
                     Device device) {
  check_f32_on("conv1d", "x", x, device);
  check_f32_on("conv1d", "out", out, device);
  check_f32_on("conv1d", "state", state, device);
  check_weight_on("conv1d", "w", w, device);
  if (x.ndim != 2) fail(ErrorKind::kInvalidArgument, "conv1d: x must be [T, C], got {}", x.describe());
  check_same_shape("conv1d", "out", out, x);
  if (out.data == x.data) fail(ErrorKind::kInvalidArgument, "conv1d: out must not alias x");
  const int64_t T = x.dim(0), C = x.dim(1);
  const bool w3 = w.ndim == 3 && w.dim(1) == 1;
  if (!(w.ndim == 2 || w3) || w.dim(0) != C)
    fail(ErrorKind::kInvalidArgument, "conv1d: w must be [C={}, K] or [C, 1, K], got {}", C, w.describe());
  const int64_t K = w.dim(w.ndim - 1);
  if (K < 1) fail(ErrorKind::kInvalidArgument, "conv1d: kernel size {} < 1", K);
  check_dims("conv1d", "state", state, {-1, K - 1, C});
  if (!state.is_contiguous()) fail(ErrorKind::kInvalidArgument, "conv1d: state must be contiguous, got {}", state.describe());
  check_batch("conv1d", batch.q_start, T);
  check_state_slots("conv1d", batch, state.dim(0));
  return K;
}

void check_gdn_gating(const Tensor& g, const Tensor& beta, const Tensor& a, const Tensor& b, const Tensor& A_log,
                      const Tensor& dt_bias, Device device) {
  for (auto [name, t] : {std::pair{"g", &g}, {"beta", &beta}, {"a", &a}, {"b", &b}})
    check_f32_on("gdn_gating", name, *t, device);
  if (a.ndim != 2) fail(ErrorKind::kInvalidArgument, "gdn_gating: a must be [T, nv], got {}", a.describe());
  check_same_shape("gdn_gating", "b", b, a);
  check_same_shape("gdn_gating", "g", g, a);
  check_same_shape("gdn_gating", "beta", beta, a);
  const int64_t nv = a.dim(1);
  check_vector_on("gdn_gating", "A_log", A_log, nv, device);
  check_vector_on("gdn_gating", "dt_bias", dt_bias, nv, device);
}

DeltaRuleDims check_gated_delta_rule(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                                     const Tensor& g, const Tensor& beta, const Tensor& state, const SeqBatch& batch,
                                     Device device) {
  for (auto [name, t] : {std::pair{"out", &out}, {"q", &q}, {"k", &k}, {"v", &v}, {"g", &g}, {"beta", &beta},
                         {"state", &state}})
    check_f32_on("gated_delta_rule", name, *t, device);
  if (q.ndim != 3 || v.ndim != 3)
    fail(ErrorKind::kInvalidArgument, "gated_delta_rule: q {} must be [T, nk, dk] and v {} [T, nv, dv]", q.describe(),
         v.describe());
  const DeltaRuleDims d{q.dim(0), q.dim(1), q.dim(2), v.dim(1), v.dim(2)};
  check_same_shape("gated_delta_rule", "k", k, q);
  check_dims("gated_delta_rule", "v", v, {d.T, d.nv, d.dv});
  check_same_shape("gated_delta_rule", "out", out, v);
  check_dims("gated_delta_rule", "g", g, {d.T, d.nv});
  check_dims("gated_delta_rule", "beta", beta, {d.T, d.nv});
  check_dims("gated_delta_rule", "state", state, {-1, d.nv, d.dk, d.dv});
  if (!state.is_contiguous())
    fail(ErrorKind::kInvalidArgument, "gated_delta_rule: state must be contiguous, got {}", state.describe());
  if (d.nk == 0 || d.nv % d.nk != 0)
    fail(ErrorKind::kInvalidArgument, "gated_delta_rule: nv {} is not a multiple of nk {}", d.nv, d.nk);
  for (const Tensor* t : {&q, &k, &v})
    if (t->data == out.data) fail(ErrorKind::kInvalidArgument, "gated_delta_rule: out must not alias its inputs");
  check_batch("gated_delta_rule", batch.q_start, d.T);
  check_state_slots("gated_delta_rule", batch, state.dim(0));
  return d;
}

}  // namespace ninfer
