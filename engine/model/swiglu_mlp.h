// Owns the SwiGLU MLP block written once against the Backend ops, for the target forward and the drafters' layers.
#pragma once

#include "engine/backend/backend.h"
#include "engine/backend/scratch_buffers.h"

namespace ninfer {

// out [T, H] = down_proj(silu(gate_proj(h)) ⊙ up_proj(h)); gate_proj / up_proj [I, H], down_proj [H, I]. The
// [T, I] intermediates live in `scratch` ("mlp_gate", "mlp_up").
inline void swiglu_mlp(Backend& backend, ScratchBuffers& scratch, const Tensor& gate_proj, const Tensor& up_proj,
                       const Tensor& down_proj, const Tensor& h, const Tensor& out) {
  const int64_t T = h.dim(0), I = gate_proj.dim(0);
  Tensor gate = scratch.get("mlp_gate", {T, I});
  Tensor up = scratch.get("mlp_up", {T, I});
  backend.linear(gate, h, gate_proj);
  backend.linear(up, h, up_proj);
  backend.silu_mul(gate, gate, up);
  backend.linear(out, gate, down_proj);
}

}  // namespace ninfer
