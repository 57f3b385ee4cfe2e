// Owns how tensor parallelism cuts the model over ranks: each rank's heads and rows (TpLayout), its local config,
// and its weight shards (WeightShard: row / column slices, NVFP4 only on 16-element blocks with their scales).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/tensor.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"

namespace ninfer {

// Rank `rank` of `size`: which heads and rows it owns (docs/parallel.md). Query heads (with their gates) and GDN
// value heads are split evenly; attention KV heads and GDN key heads are split when they divide over the ranks, and
// replicated (one per rank, the one its query / value heads read) when the ranks divide over them. The MLP
// intermediate rows and the lm_head's vocabulary rows are split in contiguous ranges [n·r/size, n·(r+1)/size).
struct TpLayout {
  int rank = 0;
  int size = 1;
  int64_t q_head0 = 0, q_heads = 0;    // attention query heads
  int64_t kv_head0 = 0, kv_heads = 0;  // attention KV heads
  bool kv_replicated = false;
  int64_t gdn_v_head0 = 0, gdn_v_heads = 0;  // GDN value heads (with their z, a, b rows and conv channels)
  int64_t gdn_k_head0 = 0, gdn_k_heads = 0;  // GDN key heads (their q and k conv channels)
  bool gdn_k_replicated = false;
  int64_t inter0 = 0, inter = 0;  // MLP intermediate rows
  int64_t vocab0 = 0, vocab = 0;  // lm_head rows (logits columns)

  // "rank 1/2: attention heads 2..3, kv 1..1 (replicated), ..." for the startup log.
  std::string describe() const;
};

// Throws Error(kInvalidArgument) naming the head counts when the model's heads cannot be cut over `size` ranks.
TpLayout tp_layout(const ModelConfig& config, int rank, int size);
// Logs every rank's layout at start, and whether KV / GDN key heads are replicated rather than split.
void log_tp_layouts(const ModelConfig& config, int size);

// The config rank `layout.rank` runs its forward, KV cache and GDN state with: its local head counts and
// intermediate size. vocab_size stays the model's (the forward gathers the full logits row on every rank).
ModelConfig tp_rank_config(const ModelConfig& config, const TpLayout& layout);

// One tensor's share on a rank. Plain dtypes are zero-copy views where a view can say it (one row range; a column
// range as rows at the full stride), else copies; an nvfp4 projection is always a copy in the artifact's nvfp4 layout
// (codes, block scales, trailer) of the shard's shape. Copies live in `owned`.
class WeightShard {
 public:
  struct Range {
    int64_t begin, end;
  };
  explicit WeightShard(ShardCopies& owned) : owned_(owned) {}

  // Rows [begin, end) of each range, concatenated (a column-parallel projection, a per-head vector); 1-D: elements.
  Tensor rows(const Tensor& w, std::span<const Range> ranges, const std::string& name);
  Tensor rows(const Tensor& w, Range range, const std::string& name) { return rows(w, std::span(&range, 1), name); }
  // Columns [begin, end) of a [N, K] projection (a row-parallel projection). nvfp4: begin and end must be multiples
  // of 16, else Error(kInvalidArgument) naming the tensor.
  Tensor columns(const Tensor& w, Range range, const std::string& name);

 private:
  std::byte* allocate(uint64_t bytes);
  ShardCopies& owned_;
};

// Rows [n·rank/size, n·(rank+1)/size) of n: a rank's even contiguous share (MLP rows, vocabulary rows). Throws
// Error(kInvalidArgument) when a rank would get none.
WeightShard::Range tp_rows(int64_t n, int rank, int size);

// One decoder layer's share on rank `layout.rank`, cut as the table in docs/parallel.md says; `prefix` names its
// tensors in errors ("model.layers.3.", "mtp.layers.0.").
LayerWeights shard_layer(WeightShard& shard, const LayerWeights& full, const ModelConfig& config, const TpLayout& layout,
                         const std::string& prefix);

// Rank `layout.rank`'s weights from the model's full weights (views into the artifact, which must outlive them).
ModelWeights shard_weights(const ModelWeights& full, const ModelConfig& config, const TpLayout& layout);

}  // namespace ninfer
