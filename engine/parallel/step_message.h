// Owns what rank 0 sends the follower processes of a multi-process tensor-parallel group, and its bytes: one forward
// step (the batch every rank runs, and the GDN state operations rank 0's bookkeeping did since the last step), or
// stop. A follower that decodes a message runs exactly what rank 0 runs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/forward_batch.h"

namespace ninfer {

// One operation on every rank's GDN state rows (LinearStateCache): zero row `dst`, or copy row `src` into `dst`.
struct StateOp {
  enum class Kind : uint8_t { kZero = 0, kCopy = 1 };
  Kind kind = Kind::kZero;
  int32_t dst = 0;
  int32_t src = 0;
  bool operator==(const StateOp&) const = default;
};

struct StepMessage {
  // kPing: nothing to run (rank 0 checks that its followers are still there while it has no step to send).
  enum class Kind : uint8_t { kForward = 1, kStop = 2, kPing = 3 };
  Kind kind = Kind::kStop;
  std::vector<StateOp> state_ops;  // applied in order, before the forward
  // kForward: owning copies of the ForwardBatch's spans.
  std::vector<int32_t> tokens, positions, q_start, seq_len, state_slot, block_table, kv_slots, logit_rows,
      checkpoint_slot;
  int32_t max_blocks = 0;

  static StepMessage forward(const ForwardBatch& batch, std::vector<StateOp> state_ops);
  static StepMessage stop();
  static StepMessage ping();
  // The batch as views into this message (valid while it lives).
  ForwardBatch batch() const;
};

// What rank 0 tells the follower processes once, before any step: the group's shape and rows (so they need not be
// computed from flags that could differ between nodes) and the model it expects them to have loaded.
struct GroupSetup {
  int32_t tp = 0;
  int64_t kv_block_size = 0, kv_blocks = 0;
  uint8_t kv_dtype = 0;  // DType
  int64_t state_slots = 0, state_checkpoints = 0, state_extra_rows = 0;
  uint8_t nvfp4_activations = 0;  // Nvfp4Activations
  // The model rank 0 loaded: its artifact's size in bytes and shape, compared with the follower's own.
  uint64_t artifact_bytes = 0;
  int64_t hidden_size = 0, num_layers = 0, vocab_size = 0;
  bool operator==(const GroupSetup&) const = default;
};

std::vector<char> encode_setup(const GroupSetup& setup);
GroupSetup decode_setup(std::span<const char> bytes);

// Little-endian bytes: "NTPS", a version, the kind, the state ops, then each array as a count and its values.
std::vector<char> encode_step(const StepMessage& message);
// Error(kCorrupt) naming what does not parse (a wrong magic or version, a count past the end, trailing bytes).
StepMessage decode_step(std::span<const char> bytes);

}  // namespace ninfer
