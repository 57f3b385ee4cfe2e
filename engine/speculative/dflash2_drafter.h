// Owns the DFlash2 block drafter: its context K/V cache per sequence and the one-forward block proposal.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/weight_store.h"
#include "engine/runtime/kv_cache.h"
#include "engine/parallel/communicator.h"
#include "engine/speculative/dflash2_config.h"
#include "engine/speculative/drafter.h"
#include "engine/backend/scratch_buffers.h"

namespace ninfer {

// The head the drafter scores with: the target's lm_head (token_ids empty: row i is token i) or the artifact's
// draft_lm_head (weight [V', H], token_ids [V'] the full-vocabulary id of each row).
struct Dflash2Head {
  Tensor weight;
  std::vector<int32_t> token_ids;
  int64_t rows = 0;  // V': the whole head's rows (under TP `weight` holds the rank's range of them); 0: weight's rows
};

struct Dflash2CacheOptions {
  int64_t block_size = 16;  // tokens per KV block
  int64_t num_blocks = 0;   // blocks per drafter layer for all sequences together
};

// Usage per sequence (docs/dflash2.md):
//   append_context(target features of the committed tokens whose hidden states the target has computed)
//   propose(anchor = the last committed token, whose hidden state is NOT yet in the context)
//   → B−1 draft tokens at positions context_length() + 1 ... ; after verification append the features of the
//   anchor and of the accepted drafts only. Nothing a proposal computes stays in the context.
class Dflash2Drafter {
 public:
  // `embed` is the target's token embedding [V, H]; all views must outlive the drafter. Under tensor parallelism
  // `config` is the rank's (dflash2_rank_config), `weights` and `head` its shares, and `comm` its handle on the group:
  // every rank makes the same calls, meeting in two all-reduces per layer and one all-gather of the head's scores.
  Dflash2Drafter(const Dflash2Config& config, Dflash2Weights weights, Tensor embed, Dflash2Head head,
                 Backend& backend, const Dflash2CacheOptions& cache, Communicator& comm = single_rank_communicator());

  const Dflash2Config& config() const { return config_; }
  int64_t head_rows() const { return head_.rows; }  // the whole head's, on every rank
  uint64_t cache_bytes() const { return kv_->allocated_bytes(); }

  // Appends rows[s] committed positions to sequence seqs[s] (positions context_length .. +rows[s]−1). Row t of
  // features[i] [T, H] (T = Σ rows, grouped per sequence in order) is the output of target decoder layer
  // config().target_layer_ids[i] for that position. Views may be strided (e.g. slices of one [T, n·H] tensor).
  void append_context(std::span<const SeqId> seqs, std::span<const int32_t> rows, std::span<const Tensor> features);
  // One forward for all sequences. tokens [S·(B−1)]: the argmax draft tokens (full-vocabulary ids), row-major per
  // sequence. logits, when not empty, [S·(B−1), head_rows()]: the head's raw scores for those rows.
  void propose(std::span<const SeqId> seqs, std::span<const int32_t> anchors, std::span<int32_t> tokens,
               std::span<float> logits = {});

  int64_t context_length(SeqId seq) const;
  // Keeps the first `tokens` context positions (a rollback; tokens ≥ the current length changes nothing).
  void truncate(SeqId seq, int64_t tokens);
  void release(SeqId seq);

 private:
  void reserve(SeqId seq, int64_t tokens);
  // k, v [T, nkv, hd] of layer l for the normed inputs x [T, H] at `positions`; written to `slots`.
  void write_kv(int64_t l, const Tensor& x, std::span<const int32_t> positions, std::span<const int32_t> slots);

  Dflash2Config config_;
  Dflash2Weights w_;
  Tensor embed_;
  Dflash2Head head_;
  Backend& backend_;
  Communicator& comm_;
  std::unique_ptr<KvCache> kv_;
  std::unordered_map<SeqId, int64_t> length_;
  ScratchBuffers scratch_;
};

// The cache of a drafter holding max_sequences sequences of max_context committed positions plus one block each,
// and its bytes (what make_dflash2_drafter allocates with the same limits).
Dflash2CacheOptions dflash2_cache_options(const Dflash2Config& config, int64_t max_sequences, int64_t max_context);
uint64_t dflash2_cache_bytes(const Dflash2Config& config, int64_t max_sequences, int64_t max_context);

// The drafter for a target loaded from `artifact`: checks and binds the dflash2 section, scores with
// `draft_lm_head` when use_draft_head (an Error when the artifact has none), else with the target's lm_head.
// Cache capacity: max_sequences sequences of max_context committed positions plus one block each. The weights (and the
// target's embedding and head, host views) are placed through `store` on its backend.
// With rank.size > 1: rank `rank.rank`'s share of the drafter (its heads, MLP rows and head rows) meeting the other
// ranks' through rank.comm.
std::unique_ptr<Dflash2Drafter> make_dflash2_drafter(const Artifact& artifact, const ModelConfig& target,
                                                     const Tensor& target_embed, const Tensor& target_lm_head,
                                                     bool use_draft_head, int64_t max_sequences, int64_t max_context,
                                                     WeightStore& store, const DrafterRank& rank = {});

}  // namespace ninfer
