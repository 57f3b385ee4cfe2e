// Owns the MTP drafter: the model's own multi-token-prediction layer with its KV cache, drafting K tokens by recursion.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/artifact/artifact.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/parallel/communicator.h"
#include "engine/speculative/drafter.h"
#include "engine/backend/scratch_buffers.h"

namespace ninfer {

// Which target hidden state conditions the MTP head (docs/mtp.md: the reference uses the post-final-norm one;
// the pre-norm variant exists to measure the difference by acceptance).
enum class MtpHidden : uint8_t {
  kPostFinalNorm,  // FeatureSpec{final_hidden}: the row lm_head reads (vLLM qwen3_5_mtp, tools/train_tiny/model.py)
  kPreFinalNorm,   // FeatureSpec{layers = {L−1}}: the residual stream after the last decoder layer
};

// Which MTP hidden state draft j ≥ 2 is conditioned on (its draft j−1 output).
enum class MtpRecursion : uint8_t {
  kAfterNorm,   // the output after mtp.norm, the row the head scores (vLLM's MTP proposer)
  kBeforeNorm,  // the MTP layer's residual stream before mtp.norm
};

struct MtpOptions {
  bool lm_head_draft = false;  // score drafts with draft_lm_head (argmax over its rows, mapped through its ids)
  MtpHidden hidden = MtpHidden::kPostFinalNorm;
  MtpRecursion recursion = MtpRecursion::kAfterNorm;
  int64_t kv_block_size = 16;
};

// The mtp section bound as views into the artifact, plus the target's shared embedding and head.
struct MtpWeights {
  Tensor pre_fc_norm_embedding, pre_fc_norm_hidden;  // [H]
  Tensor fc;                                         // [H, 2H] over cat(embedding, hidden)
  LayerWeights layer;                                // one full-attention decoder layer
  Tensor norm;                                       // [H] mtp.norm
  Tensor embed;                                      // [V, H] the target's embed_tokens
  Tensor head;                                       // [V', H] the scoring head: lm_head, or draft_lm_head.weight
  std::vector<int32_t> head_ids;                     // [V'] full-vocabulary id of each head row; empty: row = id
  int64_t head_rows = 0;                             // V': the whole head's rows (a rank's shard holds a range of them)
  ShardCopies owned;          // a shard's copies (see WeightShard)

  // Checks the mtp section (and draft_lm_head with `lm_head_draft`) and binds it. A missing section is an
  // Error(kNotFound) naming the artifact and the section.
  static MtpWeights bind(const Artifact& artifact, const ModelConfig& config, bool lm_head_draft);
};

// Rank `rank` of `size`'s share of the MTP weights under tensor parallelism: the MTP layer cut as the target's layers
// are (shard_layer: query and KV heads, MLP rows, o_proj and down_proj by columns), the head's rows [n·rank/size,
// n·(rank+1)/size) (lm_head, the tied embedding or draft_lm_head, whose ids stay whole), fc, the norms and the embedding
// whole. An MtpDrafter built on it with tp_rank_config(config, tp_layout(config, rank, size)) and the rank's
// communicator computes the rank's share and meets the other ranks in two all-reduces per layer pass and one
// all-gather of the head's scores.
MtpWeights shard_mtp_weights(const MtpWeights& full, const ModelConfig& config, int rank, int size);

// Every tensor of the MTP weights (for placing them on a device backend).
template <typename F>
void for_each_tensor(MtpWeights& w, F&& f) {
  for (Tensor* t : {&w.pre_fc_norm_embedding, &w.pre_fc_norm_hidden, &w.fc, &w.norm, &w.embed, &w.head}) f(*t);
  for_each_tensor(w.layer, f);
}

class MtpDrafter : public Drafter {
 public:
  // `weights` must outlive the drafter. Caches hold max_sequences sequences of max_context + draft_tokens positions.
  // Under tensor parallelism `config` is the rank's (tp_rank_config), `weights` its shard (shard_mtp_weights) and
  // `comm` its handle on the group; every rank then makes the same calls in the same order.
  MtpDrafter(const ModelConfig& config, MtpWeights weights, Backend& backend, const DrafterLimits& limits,
             const MtpOptions& options = {}, Communicator& comm = single_rank_communicator());

  const FeatureSpec& features() const override { return features_; }
  int32_t max_draft_tokens() const override { return limits_.draft_tokens; }
  void add_sequence(SeqId seq) override;
  void release(SeqId seq) override;
  void observe(std::span<const DraftRows> rows) override;
  void propose(std::span<const SeqId> seqs, int32_t k, std::span<int32_t> drafts) override;

  // observe(), and the head's scores of every observed row into `logits` ([Σ rows, head_rows()], row-major): row
  // p scores the token at p + 2 (what the drafter would propose after it). For acceptance studies and tests.
  void observe(std::span<const DraftRows> rows, std::span<float> logits);
  // propose(), and the head's scores behind each draft into `logits` ([seqs · k, head_rows()]).
  void propose(std::span<const SeqId> seqs, int32_t k, std::span<int32_t> drafts, std::span<float> logits);

  uint64_t cache_bytes() const override;
  // What a drafter with these limits allocates for its caches (= cache_bytes() of one built with them).
  static uint64_t planned_cache_bytes(const ModelConfig& config, const DrafterLimits& limits, const MtpOptions& options);

  int64_t head_rows() const { return w_.head_rows; }  // the whole head's, on every rank
  const MtpOptions& options() const { return options_; }
  // Committed positions the drafter holds for `seq` (its next observe() continues there).
  int64_t held(SeqId seq) const;

 private:
  struct SeqState {
    int32_t slot = 0;   // row of last_ (the newest observed row's MTP output)
    int64_t held = 0;   // positions with committed MTP K/V
  };
  // One step of S sequences bringing rows[s] tokens each (grouped per sequence in `tokens`/`positions` order).
  struct Step {
    std::vector<SeqId> seqs;
    std::vector<int32_t> tokens, positions, q_start, seq_len, table, slots;
    int32_t max_blocks = 0;
  };

  SeqState& state(SeqId seq);
  const SeqState& state(SeqId seq) const;
  // Reserves the sequence's cache for its rows and appends them to the step.
  void add_step_sequence(Step& step, SeqId seq, int64_t start, std::span<const int32_t> tokens);
  // Fills the block table (rows padded to the widest sequence) once every sequence is in.
  void finish_step(Step& step) const;
  // Query rows of the attention: their positions and per-sequence starts (PagedKv::q_start).
  struct Query {
    std::span<const int32_t> positions, q_start;
  };
  // The MTP layer over the step's tokens conditioned on `hidden` [T, H]: writes every row's K/V and returns the
  // layer's residual output (before mtp.norm) of every row ([T, H], all_rows) or of each sequence's newest row
  // ([S, H]).
  Tensor forward(const Step& step, const Tensor& hidden, bool all_rows);
  void write_kv(const Tensor& h, const Step& step);
  void attend(const Tensor& h, const Tensor& out, const Query& query, const Step& step);
  // Scores rows x [R, H] (pre-norm MTP outputs; normalised into `normed`) with the head; argmax ids into `ids`
  // (full-vocabulary), and the scores into `logits` when it is not empty.
  void score(const Tensor& x, const Tensor& normed, std::span<int32_t> ids, std::span<float> logits);

  ModelConfig config_;
  MtpWeights w_;
  Backend& backend_;
  Communicator& comm_;
  DrafterLimits limits_;
  MtpOptions options_;
  FeatureSpec features_;
  std::unique_ptr<KvCache> kv_;
  Buffer last_;  // [max_sequences, H]: the newest observed row's layer output (before mtp.norm) per slot
  std::unordered_map<SeqId, SeqState> seqs_;
  std::vector<int32_t> free_slots_;
  ScratchBuffers scratch_;
  std::vector<float> host_logits_;  // propose(): the draft scores a caller asked for (tests), one step at a time
  std::vector<int32_t> query_rows_, query_positions_, query_start_;  // forward()'s newest-row queries
};

}  // namespace ninfer
