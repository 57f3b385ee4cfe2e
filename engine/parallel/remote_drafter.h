// Owns rank 0's share of a drafter split over the processes of a multi-process tensor-parallel group: each call runs on
// rank 0's share while the same call, sent as a step message, runs on every follower process's share.
#pragma once

#include <memory>
#include <span>

#include "engine/speculative/drafter.h"

namespace ninfer {

class RemoteRanks;

class RemoteDrafter final : public Drafter {
 public:
  // `share` is rank 0's (DrafterFactory::shard with rank 0's communicator); the followers built theirs from the same
  // recipe. `ranks` outlives this.
  RemoteDrafter(RemoteRanks& ranks, std::unique_ptr<Drafter> share);

  const FeatureSpec& features() const override { return share_->features(); }
  int32_t max_draft_tokens() const override { return share_->max_draft_tokens(); }
  // Host bookkeeping: done on rank 0's share now, on the followers' with the next message.
  void add_sequence(SeqId seq) override;
  void release(SeqId seq) override;
  // The rows (their features included) go to every follower, whose shares meet rank 0's in the layer's collectives.
  void observe(std::span<const DraftRows> rows) override;
  // Rank 0's drafts; each follower computes the same from the same gathered head rows and drops them.
  void propose(std::span<const SeqId> seqs, int32_t k, std::span<int32_t> drafts) override;
  uint64_t cache_bytes() const override { return share_->cache_bytes(); }  // one rank's, as the plan counts

 private:
  RemoteRanks& ranks_;
  std::unique_ptr<Drafter> share_;
};

}  // namespace ninfer
