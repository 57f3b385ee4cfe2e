// Owns the Gated-DeltaNet ops' argument rules (conv1d, gdn_gating, gated_delta_rule, state and checkpoint slots),
// written once for every backend: each takes the device the tensors must live on.
#pragma once

#include <cstdint>

#include "engine/backend/backend.h"

namespace ninfer {

// batch.state_slot: one distinct slot in [0, slots) per sequence; batch.checkpoint_slot: empty, or one entry per
// row, each −1 or a slot in [0, slots) that is no sequence's state slot and is used by one row only.
void check_state_slots(const char* op, const SeqBatch& batch, int64_t slots);

// conv1d's arguments (backend.h); returns the kernel size K.
int64_t check_conv1d(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& state, const SeqBatch& batch,
                     Device device);

// gdn_gating's arguments.
void check_gdn_gating(const Tensor& g, const Tensor& beta, const Tensor& a, const Tensor& b, const Tensor& A_log,
                      const Tensor& dt_bias, Device device);

struct DeltaRuleDims {
  int64_t T, nk, dk, nv, dv;
};
// gated_delta_rule's arguments.
DeltaRuleDims check_gated_delta_rule(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                                     const Tensor& g, const Tensor& beta, const Tensor& state, const SeqBatch& batch,
                                     Device device);

}  // namespace ninfer
