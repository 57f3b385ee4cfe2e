// Owns the description of one forward step over a batch of sequences (the model runner fills it), and which
// activations it copies out for a drafter.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend/logit_edit.h"

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

// What a forward hands back of its logit rows (ForwardBatch::logit_rows, R of them): exactly one of
//  - `rows`: the rows themselves, host f32 [R, vocab];
//  - `argmax`: each row's greedy choice alone, host [R] (Backend::argmax_rows: the first maximum), so 4 bytes per row
//    leave a device instead of a row of the head's width (~1 MB at a 248,320-token vocabulary);
//  - `top`: each row's `top_k` first (value, id) pairs, host f32 [R, top_k, 2] (Backend::top_k_rows: by value, ties
//    by the lower id, ids as exact f32), for sampled choices that need only those (Sampler::candidates_needed).
// Either way the columns the model may not produce (Model::set_output_mask) are −inf first. With `argmax` or `top`,
// `edits` (the samplers' logit_bias and penalties, Sampler::logit_edits; rows numbered as logit_rows) are applied to
// the rows after the mask and before the choice (Backend::edit_logits); whole rows come back unedited (the host
// sampler edits them itself).
struct LogitsOut {
  std::span<float> rows = {};
  std::span<int32_t> argmax = {};
  std::span<float> top = {};
  int32_t top_k = 0;
  std::span<const LogitEdit> edits = {};
};

// The form of a LogitsOut without its buffers: what rank 0 tells the other ranks of a tensor-parallel group, whose
// forward must run the same collectives (the rows gathered, or only each rank's best pairs). Rank 0 sends the edits
// beside it (StepMessage::edits): under a vocabulary-parallel head each rank edits its own share of the columns.
struct LogitsForm {
  bool argmax = false;
  int32_t top_k = 0;  // > 0: LogitsOut::top
  bool operator==(const LogitsForm&) const = default;
  static LogitsForm of(const LogitsOut& out) { return {!out.argmax.empty(), out.top.empty() ? 0 : out.top_k}; }
};

// Which target activations a drafter is conditioned on (engine/speculative/drafter.h). Per token row the engine hands over, concatenated in
// this order: the output of each decoder layer in `layers` (the residual stream x after that layer, [H] each),
// then, when `final_hidden`, the hidden state after the target's final norm (the row lm_head reads, [H]).
struct FeatureSpec {
  std::vector<int64_t> layers{};
  bool final_hidden = false;

  int64_t width(int64_t hidden) const {
    return (static_cast<int64_t>(layers.size()) + (final_hidden ? 1 : 0)) * hidden;
  }
  bool empty() const { return layers.empty() && !final_hidden; }
};

// Optional activations the forward copies out for a drafter: for EVERY token row of the batch (not only logit rows),
// host f32 [T, spec.width(H)] in FeatureSpec order (listed decoder layers' outputs, then the final-norm hidden state).
struct FeatureCapture {
  const FeatureSpec* spec = nullptr;  // nullptr or an empty spec: nothing is captured
  std::span<float> out;
  bool active() const { return spec != nullptr && !spec->empty(); }
};

}  // namespace ninfer
