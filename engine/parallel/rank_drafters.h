// Owns a drafter split over the ranks of an in-process tensor-parallel group (TpRanks): one share per rank, each on its
// rank's backend, and every call run on every rank at once so that the shares meet in their collectives.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "engine/speculative/drafter.h"

namespace ninfer {

class TpRanks;

class RankDrafters final : public Drafter {
 public:
  // shares[r] is rank r's share (built by DrafterFactory::shard with rank r's communicator); `ranks` outlives this.
  RankDrafters(TpRanks& ranks, std::vector<std::unique_ptr<Drafter>> shares);

  const FeatureSpec& features() const override { return shares_.front()->features(); }
  int32_t max_draft_tokens() const override { return shares_.front()->max_draft_tokens(); }
  void add_sequence(SeqId seq) override;
  void release(SeqId seq) override;
  void observe(std::span<const DraftRows> rows) override;
  // Rank 0's drafts. Every rank scores the same gathered head rows, so all ranks draft the same tokens; a rank that
  // does not is an Error(kInternal) naming it.
  void propose(std::span<const SeqId> seqs, int32_t k, std::span<int32_t> drafts) override;
  // Rank 0's caches: what one device holds (the memory plan counts each rank's share).
  uint64_t cache_bytes() const override { return shares_.front()->cache_bytes(); }

 private:
  TpRanks& ranks_;
  std::vector<std::unique_ptr<Drafter>> shares_;
  std::vector<std::vector<int32_t>> rank_drafts_;  // ranks 1..N−1's drafts, compared with rank 0's
};

}  // namespace ninfer
