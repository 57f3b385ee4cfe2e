// Owns the description of one forward step over a batch of sequences (the model runner fills it).
#pragma once

#include <cstdint>
#include <span>

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
};

}  // namespace ninfer
