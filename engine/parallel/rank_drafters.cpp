#include "engine/parallel/rank_drafters.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/parallel/tp_ranks.h"

namespace ninfer {

RankDrafters::RankDrafters(TpRanks& ranks, std::vector<std::unique_ptr<Drafter>> shares)
    : ranks_(ranks), shares_(std::move(shares)), rank_drafts_(shares_.size()) {
  if (static_cast<int>(shares_.size()) != ranks.size() ||
      std::any_of(shares_.begin(), shares_.end(), [](const auto& d) { return !d; }))
    fail(ErrorKind::kInternal, "sharded drafter: {} shares for {} ranks", shares_.size(), ranks.size());
}

void RankDrafters::add_sequence(SeqId seq) {
  ranks_.run([&](int rank) { shares_[static_cast<size_t>(rank)]->add_sequence(seq); });
}

void RankDrafters::release(SeqId seq) {
  ranks_.run([&](int rank) { shares_[static_cast<size_t>(rank)]->release(seq); });
}

void RankDrafters::observe(std::span<const DraftRows> rows) {
  ranks_.run([&](int rank) { shares_[static_cast<size_t>(rank)]->observe(rows); });
}

void RankDrafters::propose(std::span<const SeqId> seqs, int32_t k, std::span<int32_t> drafts) {
  ranks_.run([&](int rank) {
    if (rank == 0) return shares_.front()->propose(seqs, k, drafts);
    std::vector<int32_t>& mine = rank_drafts_[static_cast<size_t>(rank)];
    mine.resize(drafts.size());
    shares_[static_cast<size_t>(rank)]->propose(seqs, k, mine);
  });
  for (size_t r = 1; r < shares_.size(); ++r)
    if (!std::equal(drafts.begin(), drafts.end(), rank_drafts_[r].begin()))
      fail(ErrorKind::kInternal, "sharded drafter: rank {} drafted other tokens than rank 0", r);
}

}  // namespace ninfer
