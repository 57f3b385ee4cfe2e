#include "engine/parallel/remote_drafter.h"

#include "engine/core/error.h"
#include "engine/parallel/remote_ranks.h"

namespace ninfer {

RemoteDrafter::RemoteDrafter(RemoteRanks& ranks, std::unique_ptr<Drafter> share)
    : ranks_(ranks), share_(std::move(share)) {
  if (!share_) fail(ErrorKind::kInternal, "split drafter: rank 0 has no share");
}

void RemoteDrafter::add_sequence(SeqId seq) {
  share_->add_sequence(seq);
  ranks_.queue({DrafterOp::Kind::kAdd, seq});
}

void RemoteDrafter::release(SeqId seq) {
  share_->release(seq);
  ranks_.queue({DrafterOp::Kind::kRelease, seq});
}

void RemoteDrafter::observe(std::span<const DraftRows> rows) {
  ranks_.lockstep(StepMessage::draft_observe(rows), [&] { share_->observe(rows); });
}

void RemoteDrafter::propose(std::span<const SeqId> seqs, int32_t k, std::span<int32_t> drafts) {
  ranks_.lockstep(StepMessage::draft_propose(seqs, k), [&] { share_->propose(seqs, k, drafts); });
}

}  // namespace ninfer
