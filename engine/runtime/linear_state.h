// Owns the per-sequence Gated-DeltaNet state pools: conv history and recurrent state, one slot per sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/model/model_config.h"

namespace ninfer {

class LinearStateCache {
 public:
  // Allocates `max_slots` sequence slots plus `checkpoints_per_slot` checkpoint slots per sequence slot (speculative
  // verification rows, docs/speculative.md) plus `extra_rows` rows for other holders (prefix-cache snapshots,
  // docs/prefix-cache.md) for every linear-attention layer: conv [rows, K−1, C] and recurrent [rows, nv, dk, dv],
  // both f32. Sequence slots are rows [0, max_slots), checkpoints follow, then the extra rows.
  LinearStateCache(Backend& backend, const ModelConfig& config, int64_t max_slots, int64_t checkpoints_per_slot = 0,
                   int64_t extra_rows = 0);

  // A zeroed slot for a new sequence; throws Error(kOutOfMemory) when all are taken.
  int32_t acquire();
  void release(int32_t slot);
  // Copies every layer's state of slot `src` into `dst` (snapshots for speculative decoding).
  void copy_slot(int32_t dst, int32_t src);

  const Tensor& conv(int64_t gdn_layer) const { return conv_[static_cast<size_t>(gdn_layer)]; }
  const Tensor& recurrent(int64_t gdn_layer) const { return rec_[static_cast<size_t>(gdn_layer)]; }
  // Row of checkpoint j (< checkpoints_per_slot) owned by sequence slot `slot`.
  int32_t checkpoint_slot(int32_t slot, int64_t j) const {
    return static_cast<int32_t>(max_slots_ + slot * checkpoints_ + j);
  }
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
};

}  // namespace ninfer
