#include "engine/speculative/dflash2_spec_drafter.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "engine/core/error.h"
#include "engine/model/model_weights.h"

namespace ninfer {

Dflash2SpecDrafter::Dflash2SpecDrafter(std::unique_ptr<Dflash2Drafter> drafter) : drafter_(std::move(drafter)) {
  spec_.layers = drafter_->config().target_layer_ids;
  spec_.final_hidden = false;
}

int32_t Dflash2SpecDrafter::max_draft_tokens() const {
  return static_cast<int32_t>(drafter_->config().num_draft_tokens());
}

void Dflash2SpecDrafter::add_sequence(SeqId seq) {
  if (tokens_.count(seq) != 0)
    fail(ErrorKind::kInvalidArgument, "DFlash2 drafter: sequence {} was already added", seq);
  tokens_[seq];
}

void Dflash2SpecDrafter::release(SeqId seq) {
  tokens_.erase(seq);
  drafter_->release(seq);
}

void Dflash2SpecDrafter::observe(std::span<const DraftRows> rows) {
  const Dflash2Config& c = drafter_->config();
  const int64_t H = c.hidden_size, width = spec_.width(H), nf = static_cast<int64_t>(spec_.layers.size());
  std::vector<SeqId> seqs;
  std::vector<int32_t> counts;
  int64_t total = 0;
  for (const DraftRows& r : rows) {
    auto it = tokens_.find(r.seq);
    if (it == tokens_.end())
      fail(ErrorKind::kInvalidArgument, "DFlash2 drafter: observe() for sequence {} before add_sequence()", r.seq);
    const int64_t n = static_cast<int64_t>(r.next_tokens.size());
    const int64_t held = drafter_->context_length(r.seq);
    if (r.start < 0 || r.start > held)
      fail(ErrorKind::kInvalidArgument, "DFlash2 drafter: sequence {} rows start at {} but it holds {} positions "
           "(rows must continue at or below the held length)", r.seq, r.start, held);
    if (static_cast<int64_t>(r.features.size()) != n * width)
      fail(ErrorKind::kInvalidArgument, "DFlash2 drafter: sequence {}: {} rows need {} feature floats ({} × {}), got "
           "{}", r.seq, n, n * width, n, width, r.features.size());
    if (std::count(seqs.begin(), seqs.end(), r.seq) != 0)
      fail(ErrorKind::kInvalidArgument, "DFlash2 drafter: sequence {} appears twice in one observe()", r.seq);
    drafter_->truncate(r.seq, r.start);
    it->second.resize(static_cast<size_t>(r.start));
    it->second.insert(it->second.end(), r.next_tokens.begin(), r.next_tokens.end());
    if (n == 0) continue;
    seqs.push_back(r.seq);
    counts.push_back(static_cast<int32_t>(n));
    total += n;
  }
  if (total == 0) return;
  // One batch for all sequences: rows grouped per sequence in order, [total, n_feat·H] row-major.
  staging_.resize(static_cast<size_t>(total * width));
  size_t at = 0;
  for (const DraftRows& r : rows) {
    std::memcpy(staging_.data() + at, r.features.data(), r.features.size_bytes());
    at += r.features.size();
  }
  std::vector<Tensor> views;
  for (int64_t i = 0; i < nf; ++i)
    views.push_back(Tensor::strided(staging_.data() + i * H, DType::kF32, {total, H}, {width, 1}));
  drafter_->append_context(seqs, counts, views);
}

void Dflash2SpecDrafter::propose(std::span<const SeqId> seqs, int32_t k, std::span<int32_t> drafts) {
  const int64_t D = drafter_->config().num_draft_tokens(), S = static_cast<int64_t>(seqs.size());
  if (k < 1 || k > D)
    fail(ErrorKind::kInvalidArgument, "DFlash2 drafter: {} draft tokens requested; its block of {} proposes 1 to {}",
         k, D + 1, D);
  if (static_cast<int64_t>(drafts.size()) != S * k)
    fail(ErrorKind::kInvalidArgument, "DFlash2 drafter: drafts span holds {}, {} sequences × {} need {}",
         drafts.size(), S, k, S * k);
  std::vector<int32_t> anchors;
  anchors.reserve(seqs.size());
  for (SeqId s : seqs) {
    auto it = tokens_.find(s);
    if (it == tokens_.end() || it->second.empty())
      fail(ErrorKind::kInvalidArgument, "DFlash2 drafter: propose() for sequence {} with no observed rows", s);
    if (static_cast<int64_t>(it->second.size()) != drafter_->context_length(s))
      fail(ErrorKind::kInternal, "DFlash2 drafter: sequence {} holds {} tokens but {} context positions", s,
           it->second.size(), drafter_->context_length(s));
    anchors.push_back(it->second.back());
  }
  std::vector<int32_t> block(static_cast<size_t>(S * D));
  drafter_->propose(seqs, anchors, block);
  for (int64_t s = 0; s < S; ++s)
    std::copy_n(block.begin() + s * D, k, drafts.begin() + s * k);
}

uint64_t Dflash2SpecDrafter::cache_bytes() const { return drafter_->cache_bytes(); }

std::unique_ptr<Drafter> make_dflash2_spec_drafter(const Artifact& artifact, const ModelConfig& target,
                                                   const Tensor& embed, const Tensor& lm_head, bool use_draft_head,
                                                   WeightStore& store, const DrafterLimits& limits,
                                                   const DrafterRank& rank) {
  if (limits.max_sequences < 1 || limits.max_context < 1)
    fail(ErrorKind::kInvalidArgument, "DFlash2 drafter: limits need max_sequences ≥ 1 and max_context ≥ 1, got {} "
         "and {}", limits.max_sequences, limits.max_context);
  auto d = make_dflash2_drafter(artifact, target, embed, lm_head, use_draft_head, limits.max_sequences,
                                limits.max_context, store, rank);
  if (limits.draft_tokens < 1 || limits.draft_tokens > d->config().num_draft_tokens())
    fail(ErrorKind::kInvalidArgument, "{}: --draft-tokens {} with DFlash2: its block of {} proposes 1 to {} tokens",
         artifact.path(), limits.draft_tokens, d->config().block_size, d->config().num_draft_tokens());
  return std::make_unique<Dflash2SpecDrafter>(std::move(d));
}

namespace {

void require_draft_head(const Artifact& artifact) {
  if (artifact.find("draft_lm_head.weight") == nullptr || artifact.find("draft_lm_head.ids") == nullptr)
    fail(ErrorKind::kNotFound, "{}: --lm-head-draft needs the draft_lm_head section (draft_lm_head.weight, "
         "draft_lm_head.ids; ninfer-pack --draft-vocab writes it)", artifact.path());
}

}  // namespace

DrafterFactory make_dflash2_factory(const Artifact& artifact, const ModelConfig& target, bool lm_head_draft) {
  load_dflash2_config(artifact, target);  // refuse a missing or malformed section at start, not at the first request
  if (lm_head_draft) require_draft_head(artifact);
  auto weights = std::make_shared<const ModelWeights>(ModelWeights::bind(artifact, target));
  const Artifact* a = &artifact;
  DrafterFactory f = [a, target, weights, lm_head_draft](WeightStore& store, const DrafterLimits& limits) {
    return make_dflash2_spec_drafter(*a, target, weights->embed, weights->lm_head, lm_head_draft, store, limits);
  };
  f.shard = [a, target, weights, lm_head_draft](WeightStore& store, const DrafterLimits& limits,
                                                const DrafterRank& rank) {
    return make_dflash2_spec_drafter(*a, target, weights->embed, weights->lm_head, lm_head_draft, store, limits, rank);
  };
  return f;
}

std::string describe_dflash2(const Artifact& artifact, const ModelConfig& target, bool lm_head_draft) {
  const Dflash2Config c = load_dflash2_config(artifact, target);
  std::string head = fmt::format("the full lm_head ({} rows)", target.vocab_size);
  if (lm_head_draft) {
    require_draft_head(artifact);
    head = fmt::format("draft_lm_head ({} of {} rows)", artifact.require("draft_lm_head.ids").shape[0],
                       target.vocab_size);
  }
  return fmt::format("dflash2: {} drafter layers, block {} (anchor + {} drafts in one forward), context from target "
                     "layers [{}] (own KV cache), drafts scored by {}",
                     c.num_layers, c.block_size, c.num_draft_tokens(), fmt::join(c.target_layer_ids, ","), head);
}

}  // namespace ninfer
