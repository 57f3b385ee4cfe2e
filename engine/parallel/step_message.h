// Owns what rank 0 sends the follower processes of a multi-process tensor-parallel group, and its bytes: one forward
// step (the batch every rank runs, and the GDN state operations rank 0's bookkeeping did since the last step), one call
// of the split drafter (build, observe, propose, with the sequences it added and released since), or stop. A follower
// that decodes a message runs exactly what rank 0 runs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/forward_batch.h"
#include "engine/speculative/drafter.h"
#include "engine/speculative/drafter_registry.h"

namespace ninfer {

// One operation on every rank's GDN state rows (LinearStateCache): zero row `dst`, or copy row `src` into `dst`.
struct StateOp {
  enum class Kind : uint8_t { kZero = 0, kCopy = 1 };
  Kind kind = Kind::kZero;
  int32_t dst = 0;
  int32_t src = 0;
  bool operator==(const StateOp&) const = default;
};

// A split drafter's sequence bookkeeping on rank 0 (Drafter::add_sequence / release), done on every rank's share.
struct DrafterOp {
  enum class Kind : uint8_t { kAdd = 0, kRelease = 1 };
  Kind kind = Kind::kAdd;
  SeqId seq = 0;
  bool operator==(const DrafterOp&) const = default;
};

struct StepMessage {
  // kPing: nothing to run (rank 0 checks that its followers are still there while it has no step to send).
  // kDraftBuild / kDraftObserve / kDraftPropose: a call of the drafter split over the ranks (RemoteDrafter).
  enum class Kind : uint8_t { kForward = 1, kStop = 2, kPing = 3, kDraftBuild = 4, kDraftObserve = 5, kDraftPropose = 6 };
  Kind kind = Kind::kStop;
  std::vector<DrafterOp> drafter_ops;  // applied in order, before the message's own work
  std::vector<StateOp> state_ops;      // applied in order, before the message's own work
  // kForward: owning copies of the ForwardBatch's spans.
  std::vector<int32_t> tokens, positions, q_start, seq_len, state_slot, block_table, kv_slots, logit_rows,
      checkpoint_slot;
  int32_t max_blocks = 0;
  LogitsForm logits;  // what rank 0 asks of the logit rows: the rows, their argmax or their top pairs (LogitsOut)
  std::vector<LogitEdit> edits;  // with the argmax or top pairs: the samplers' edits of the rows (LogitsOut::edits)
  // kDraftBuild: how to build this rank's share of the drafter.
  DrafterRecipe recipe;
  DrafterLimits limits;
  // kDraftObserve: each DraftRows' sequence, start and row count; their next tokens and feature rows, concatenated.
  std::vector<int64_t> row_seq, row_start;
  std::vector<int32_t> row_count, row_tokens;
  std::vector<float> row_features;
  // kDraftPropose: the sequences and k.
  std::vector<int64_t> propose_seqs;
  int32_t propose_k = 0;

  static StepMessage forward(const ForwardBatch& batch, std::vector<StateOp> state_ops, LogitsForm logits = {},
                             std::span<const LogitEdit> edits = {});
  static StepMessage stop();
  static StepMessage ping();
  static StepMessage draft_build(const DrafterRecipe& recipe, const DrafterLimits& limits);
  static StepMessage draft_observe(std::span<const DraftRows> rows);
  static StepMessage draft_propose(std::span<const SeqId> seqs, int32_t k);
  // The batch as views into this message (valid while it lives).
  ForwardBatch batch() const;
  // kDraftObserve's rows as views into this message (valid while it lives); `features` is each row's feature width.
  // Error(kCorrupt) when the counts and the concatenated arrays disagree.
  std::vector<DraftRows> draft_rows(int64_t feature_width) const;
};

// What rank 0 tells the follower processes once, before any step: the group's shape and rows (so they need not be
// computed from flags that could differ between nodes) and the model it expects them to have loaded.
struct GroupSetup {
  int32_t tp = 0;
  int64_t kv_block_size = 0, kv_blocks = 0;
  uint8_t kv_dtype = 0;  // DType
  int64_t state_slots = 0, state_checkpoints = 0, state_extra_rows = 0;
  uint8_t nvfp4_activations = 0;  // Nvfp4Activations
  uint8_t bf16_activations = 0;   // BackendSelection::bf16_activations
  uint8_t backend = 0;            // BackendKind rank 0 runs (resolved: kCpu or kCuda); every rank runs the same
  // The model rank 0 loaded: its artifact's size in bytes and shape, compared with the follower's own.
  uint64_t artifact_bytes = 0;
  int64_t hidden_size = 0, num_layers = 0, vocab_size = 0;
  bool operator==(const GroupSetup&) const = default;
};

std::vector<char> encode_setup(const GroupSetup& setup);
GroupSetup decode_setup(std::span<const char> bytes);

// Little-endian bytes: "NTPS", a version, the kind, the drafter and state ops, then the kind's fields (each array as a
// count and its values).
std::vector<char> encode_step(const StepMessage& message);
// Error(kCorrupt) naming what does not parse (a wrong magic or version, a count past the end, trailing bytes).
StepMessage decode_step(std::span<const char> bytes);

}  // namespace ninfer
