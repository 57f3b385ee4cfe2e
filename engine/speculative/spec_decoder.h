// Owns the engine side of speculative decoding around any Drafter: the batched propose() of one step, the
// verification blocks [pending, d1..dk] and GDN checkpoint slots they run with, and the batched observe() of
// every sequence's committed rows (docs/speculative.md).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/runtime/linear_state.h"
#include "engine/speculative/drafter.h"

namespace ninfer {

// One sequence that verifies a drafted block this step: its newest (pending) token and how many drafts it takes.
struct DraftRequest {
  SeqId seq = 0;
  int32_t pending = 0;
  int32_t k = 0;  // 1 ≤ k ≤ draft_tokens()
};

class SpecDecoder {
 public:
  // `state` must have draft_tokens checkpoints per slot. Throws Error(kInvalidArgument) when draft_tokens is
  // outside [1, drafter.max_draft_tokens()].
  SpecDecoder(std::unique_ptr<Drafter> drafter, int32_t draft_tokens, int32_t max_sequences,
              const LinearStateCache& state, int64_t vocab_size);

  const FeatureSpec& features() const { return drafter_->features(); }
  int32_t draft_tokens() const { return k_; }
  Drafter& drafter() { return *drafter_; }

  void add(SeqId seq) { drafter_->add_sequence(seq); }
  void release(SeqId seq) { drafter_->release(seq); }

  // One batched propose() over `reqs` (every listed sequence must have been observed up to its pending token);
  // block(i) then holds [pending, d1..d_k] of reqs[i]. Drafted ids outside the vocabulary throw Error(kInternal).
  void draft(std::span<const DraftRequest> reqs);
  std::span<const int32_t> block(size_t i) const;
  // The checkpoint rows of block(i)'s rows for the sequence in `state_slot`: rows 0..k−1 get checkpoints 0..k−1, the
  // last row none (when every row is committed, the slot's live row itself holds its state).
  std::span<const int32_t> checkpoints(size_t i, int32_t state_slot);

  // Committed rows to hand the drafter; queued during a step, delivered by one observe() in flush(). The spans must
  // stay valid until flush().
  void queue(const DraftRows& rows) { pending_rows_.push_back(rows); }
  void flush();

 private:
  std::unique_ptr<Drafter> drafter_;
  int32_t k_;
  int64_t vocab_;
  const LinearStateCache& state_;
  std::vector<int32_t> blocks_;       // [max_sequences · (k + 1)]
  std::vector<int32_t> block_ckpt_;   // [max_sequences · (k + 1)], filled by checkpoints()
  std::vector<int32_t> lengths_;      // per request of the last draft(): k + 1
  std::vector<SeqId> ids_;
  std::vector<int32_t> drafts_;
  std::vector<DraftRows> pending_rows_;
};

}  // namespace ninfer
