// Owns the scoring head written once against the Backend ops and a Communicator, for the target's lm_head and the
// drafters' heads: under tensor parallelism each rank holds a range of the head's rows and the scores are gathered.
#pragma once

#include "engine/backend/backend.h"
#include "engine/backend/scratch_buffers.h"
#include "engine/parallel/communicator.h"

namespace ninfer {

// out [R, V] = x [R, H] · headᵀ. One rank: `head` is [V, H]. Under TP `head` is this rank's rows [V_r, H]: its columns
// of the scores go to scratch "logits_part" [R, V_r] and are gathered into `out` on every rank (rank order).
inline void vocab_parallel_head(Backend& backend, Communicator& comm, ScratchBuffers& scratch, const Tensor& x,
                                const Tensor& head, const Tensor& out) {
  if (comm.size() == 1) return backend.linear(out, x, head);
  Tensor part = scratch.get("logits_part", {x.dim(0), head.dim(0)});
  backend.linear(part, x, head);
  comm.all_gather(out, part, backend);
}

}  // namespace ninfer
