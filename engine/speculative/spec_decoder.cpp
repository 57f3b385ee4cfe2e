// Speculative decoding around a Drafter: batched drafting, verification blocks, checkpoint slots, batched observe.
#include "engine/speculative/spec_decoder.h"

#include <algorithm>

#include "engine/core/error.h"

namespace ninfer {

SpecDecoder::SpecDecoder(std::unique_ptr<Drafter> drafter, int32_t draft_tokens, int32_t max_sequences,
                         const LinearStateCache& state, int64_t vocab_size)
    : drafter_(std::move(drafter)), k_(draft_tokens), vocab_(vocab_size), state_(state) {
  if (!drafter_) fail(ErrorKind::kInvalidArgument, "speculative decoding: the drafter factory returned no drafter");
  if (k_ < 1 || k_ > drafter_->max_draft_tokens())
    fail(ErrorKind::kInvalidArgument, "speculative decoding: draft_tokens {} outside [1, {}] (the drafter's maximum)",
         k_, drafter_->max_draft_tokens());
  if (state.checkpoints_per_slot() < k_)
    fail(ErrorKind::kInvalidArgument, "speculative decoding: {} state checkpoints per slot, {} draft tokens need {}",
         state.checkpoints_per_slot(), k_, k_);
  blocks_.resize(static_cast<size_t>(max_sequences) * static_cast<size_t>(k_ + 1));
  block_ckpt_.resize(blocks_.size());
  drafts_.resize(static_cast<size_t>(max_sequences) * static_cast<size_t>(k_));
  ids_.reserve(static_cast<size_t>(max_sequences));
  lengths_.reserve(static_cast<size_t>(max_sequences));
}

void SpecDecoder::draft(std::span<const DraftRequest> reqs) {
  lengths_.clear();
  ids_.clear();
  if (reqs.empty()) return;
  if (reqs.size() * static_cast<size_t>(k_ + 1) > blocks_.size())
    fail(ErrorKind::kInternal, "speculative decoding: {} drafting sequences, room for {}", reqs.size(),
         blocks_.size() / static_cast<size_t>(k_ + 1));
  int32_t k = 0;
  for (const auto& r : reqs) {
    if (r.k < 1 || r.k > k_) fail(ErrorKind::kInternal, "sequence {} asks for {} drafts (1..{})", r.seq, r.k, k_);
    k = std::max(k, r.k);
    ids_.push_back(r.seq);
  }
  std::span<int32_t> drafts(drafts_.data(), reqs.size() * static_cast<size_t>(k));
  drafter_->propose(ids_, k, drafts);
  for (size_t i = 0; i < reqs.size(); ++i) {
    int32_t* b = blocks_.data() + i * static_cast<size_t>(k_ + 1);
    b[0] = reqs[i].pending;
    for (int32_t j = 0; j < reqs[i].k; ++j) {
      const int32_t d = drafts[i * static_cast<size_t>(k) + static_cast<size_t>(j)];
      if (d < 0 || d >= vocab_)
        fail(ErrorKind::kInternal, "the drafter proposed token id {} for sequence {} (draft {}), outside [0, {})", d,
             reqs[i].seq, j, vocab_);
      b[j + 1] = d;
    }
    lengths_.push_back(reqs[i].k + 1);
  }
}

std::span<const int32_t> SpecDecoder::block(size_t i) const {
  return {blocks_.data() + i * static_cast<size_t>(k_ + 1), static_cast<size_t>(lengths_.at(i))};
}

std::span<const int32_t> SpecDecoder::checkpoints(size_t i, int32_t state_slot) {
  const size_t n = static_cast<size_t>(lengths_.at(i));
  int32_t* c = block_ckpt_.data() + i * static_cast<size_t>(k_ + 1);
  for (size_t j = 0; j + 1 < n; ++j) c[j] = state_.checkpoint_slot(state_slot, static_cast<int64_t>(j));
  c[n - 1] = -1;
  return {c, n};
}

void SpecDecoder::flush() {
  if (pending_rows_.empty()) return;
  drafter_->observe(pending_rows_);
  pending_rows_.clear();
}

}  // namespace ninfer
