// Owns the description of one forward step over a batch of sequences (the model runner fills it).
#pragma once

#include <cstdint>
#include <span>

#include "engine/spec/drafter.h"

namespace ninfer {

// S sequences bring T new tokens in all; sequence s owns token rows [q_start[s], q_start[s+1]).
// Every span is host memory and lives until forward() returns.
struct ForwardBatch {
  std::span<const int32_t> tokens;       // [T] token ids
  std::span<const int32_t> positions;    // [T] absolute position of each token in its sequence
  std::span<const int32_t> q_start;      // [S+1]
  std::span<const int32_t> seq_len;      // [S] tokens in the KV cache after this step (past + new)
  std::span<const int32_t> state_slot;   // [S] linear-attention state slot of each sequence
  std::span<const int32_t> block_table;  // [S · max_blocks] KV block ids, row-major, padded with 0
  int32_t max_blocks = 0;
  std::span<const int32_t> kv_slots;     // [T] KV cache row of each new token
  std::span<const int32_t> logit_rows;   // [R] token rows whose logits are wanted, in output order
  // Optional [T] or empty: GDN state checkpoint slot per row, −1 = none (SeqBatch::checkpoint_slot; speculative
  // verification rows, docs/speculative.md).
  std::span<const int32_t> checkpoint_slot = {};
};

// Optional activations the forward copies out for a drafter: for EVERY token row of the batch (not only logit rows),
// host f32 [T, spec.width(H)] in FeatureSpec order (listed decoder layers' outputs, then the final-norm hidden state).
struct FeatureCapture {
  const FeatureSpec* spec = nullptr;  // nullptr or an empty spec: nothing is captured
  std::span<float> out;
  bool active() const { return spec != nullptr && !spec->empty(); }
};

}  // namespace ninfer
