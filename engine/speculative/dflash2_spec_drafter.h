// Owns the DFlash2 adapter to the engine's Drafter interface: committed rows in, one block forward per proposal.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/artifact/artifact.h"
#include "engine/model/model_config.h"
#include "engine/speculative/dflash2_drafter.h"
#include "engine/speculative/drafter.h"

namespace ninfer {

// features() = the outputs of dflash2.config's target_layer_ids (no final hidden). observe() appends the rows'
// features as context (a start below the held length truncates first) and remembers each sequence's newest token,
// the anchor of the next block. propose(k ≤ block_size − 1) runs one block forward for all listed sequences and
// returns the first k of its block_size − 1 greedy drafts (docs/dflash2.md).
class Dflash2SpecDrafter final : public Drafter {
 public:
  explicit Dflash2SpecDrafter(std::unique_ptr<Dflash2Drafter> drafter);

  const FeatureSpec& features() const override { return spec_; }
  int32_t max_draft_tokens() const override;
  void add_sequence(SeqId seq) override;
  void release(SeqId seq) override;
  void observe(std::span<const DraftRows> rows) override;
  void propose(std::span<const SeqId> seqs, int32_t k, std::span<int32_t> drafts) override;
  uint64_t cache_bytes() const override;

  const Dflash2Drafter& drafter() const { return *drafter_; }

 private:
  std::unique_ptr<Dflash2Drafter> drafter_;
  FeatureSpec spec_;
  // Per sequence: committed tokens at positions 1 .. context_length (tokens_[i] is the token at position i + 1),
  // so the anchor after a rollback is known without the engine resending it.
  std::unordered_map<SeqId, std::vector<int32_t>> tokens_;
  std::vector<float> staging_;
};

// The DFlash2 drafter of `artifact` for a target whose token embedding and lm_head are `embed` / `lm_head`
// (views on the backend's device that outlive the drafter). use_draft_head scores with the artifact's
// draft_lm_head instead of the full lm_head. The draft cache holds limits.max_sequences sequences of
// limits.max_context committed tokens plus one block each.
std::unique_ptr<Drafter> make_dflash2_spec_drafter(const Artifact& artifact, const ModelConfig& target,
                                                   const Tensor& embed, const Tensor& lm_head, bool use_draft_head,
                                                   WeightStore& store, const DrafterLimits& limits,
                                                   const DrafterRank& rank = {});

// What `--spec dflash2 [--lm-head-draft]` builds (engine/speculative/drafter_registry.cpp): checks the dflash2 section (and
// draft_lm_head with lm_head_draft) now, binds the target's embedding and lm_head from `artifact`, which must
// outlive every drafter the factory makes.
DrafterFactory make_dflash2_factory(const Artifact& artifact, const ModelConfig& target, bool lm_head_draft);
// One start-log line: layers, block, target layers, head.
std::string describe_dflash2(const Artifact& artifact, const ModelConfig& target, bool lm_head_draft);

}  // namespace ninfer
