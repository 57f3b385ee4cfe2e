// Owns the per-sequence Gated-DeltaNet state pools: conv history and recurrent state, one slot per sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/model/model_config.h"

namespace ninfer {

// What receives rank 0's GDN state operations for another rank's rows under tensor parallelism: that rank's own
// LinearStateCache (a follower thread of this process), or the step messages to a follower process (RemoteRanks).
class StateMirror {
 public:
  virtual ~StateMirror() = default;
  virtual void zero_row(int32_t row) = 0;
  virtual void copy_slot(int32_t dst, int32_t src) = 0;
};

class LinearStateCache final : public StateMirror {
 public:
  // Allocates `max_slots` sequence slots plus `checkpoints_per_slot` checkpoint slots per sequence slot (speculative
  // verification rows, docs/speculative.md) plus `extra_rows` rows for other holders (prefix-cache snapshots,
  // docs/prefix-cache.md) for every linear-attention layer: conv [rows, K−1, C] and recurrent [rows, nv, dk, dv],
  // both f32. At first slot s lives in row s and its checkpoints follow rows [0, max_slots), then the extra rows;
  // adopt_checkpoint permutes a slot's own rows (row(), checkpoint_slot()).
  LinearStateCache(Backend& backend, const ModelConfig& config, int64_t max_slots, int64_t checkpoints_per_slot = 0,
                   int64_t extra_rows = 0);

  // A sequence slot whose live row is zeroed; throws Error(kOutOfMemory) when all are taken.
  int32_t acquire();
  void release(int32_t slot);
  // Copies every layer's state of row `src` into row `dst` (prefix-cache snapshots).
  void copy_slot(int32_t dst, int32_t src) override;
  // Zeroes every layer's state of row `row` (this cache's own: not the mirrors').
  void zero_row(int32_t row) override;

  // Tensor parallelism (docs/parallel.md): from now on, zeroing an acquired slot and copy_slot also apply to
  // `follower`'s rows (another rank's state of the same rows; its heads may differ), on the calling thread, so every
  // rank's state follows rank 0's slot bookkeeping. `follower` must outlive this cache and not run work meanwhile.
  // Error(kInvalidArgument) when its rows differ.
  void mirror_to(LinearStateCache& follower);
  // The same for a mirror that is not a cache here (a follower process's rows, through RemoteRanks).
  void mirror_to(StateMirror& mirror);

  const Tensor& conv(int64_t gdn_layer) const { return conv_[static_cast<size_t>(gdn_layer)]; }
  const Tensor& recurrent(int64_t gdn_layer) const { return rec_[static_cast<size_t>(gdn_layer)]; }
  // A sequence slot owns 1 + checkpoints_per_slot rows: the live row, which holds the sequence's state (what the
  // forward reads and updates: the rows a ForwardBatch names), and one row per checkpoint. Which row plays which part
  // changes when a checkpoint is adopted; the slot number itself (the sequence's, and the index of its extra rows)
  // does not.
  int32_t row(int32_t slot) const { return rows_[static_cast<size_t>(slot * (1 + checkpoints_))]; }
  // Row of checkpoint j (< checkpoints_per_slot) owned by sequence slot `slot`.
  int32_t checkpoint_slot(int32_t slot, int64_t j) const {
    return rows_[static_cast<size_t>(slot * (1 + checkpoints_) + 1 + j)];
  }
  // Speculative verification committed the rows up to checkpoint j's: its row becomes the slot's live row and the old
  // live row a checkpoint row (to be overwritten by the next verification), in place of copying every layer's state.
  // Only rank 0's bookkeeping changes: every rank reads and writes the rows rank 0 names.
  void adopt_checkpoint(int32_t slot, int64_t j);
  // Extra row i (< extra_rows).
  int32_t extra_row(int64_t i) const { return static_cast<int32_t>(max_slots_ * (1 + checkpoints_) + i); }
  int64_t extra_rows() const { return extra_; }
  int64_t checkpoints_per_slot() const { return checkpoints_; }
  int64_t max_slots() const { return max_slots_; }
  int64_t free_slots() const { return static_cast<int64_t>(free_.size()); }

  static uint64_t bytes_per_slot(const ModelConfig& config);

 private:

  Backend& backend_;
  int64_t max_slots_;
  int64_t checkpoints_;
  int64_t extra_;
  std::vector<Buffer> buffers_;
  std::vector<Tensor> conv_, rec_;
  std::vector<int32_t> free_;
  std::vector<int32_t> rows_;  // [max_slots, 1 + checkpoints]: per slot its live row, then checkpoint rows 0, 1, …
  std::vector<StateMirror*> mirrors_;
};

}  // namespace ninfer
