#include "engine/runtime/linear_state.h"

#include <utility>

#include "engine/core/error.h"

namespace ninfer {

uint64_t LinearStateCache::bytes_per_slot(const ModelConfig& c) {
  const uint64_t conv = static_cast<uint64_t>((c.linear_conv_kernel - 1) * c.linear_conv_dim());
  const uint64_t rec =
      static_cast<uint64_t>(c.linear_num_value_heads * c.linear_key_head_dim * c.linear_value_head_dim);
  return static_cast<uint64_t>(c.num_linear_attention_layers()) * (conv + rec) * sizeof(float);
}

LinearStateCache::LinearStateCache(Backend& backend, const ModelConfig& c, int64_t max_slots,
                                   int64_t checkpoints_per_slot, int64_t extra_rows)
    : backend_(backend), max_slots_(max_slots), checkpoints_(checkpoints_per_slot), extra_(extra_rows) {
  if (max_slots <= 0) fail(ErrorKind::kInvalidArgument, "linear state needs at least one slot");
  if (checkpoints_per_slot < 0)
    fail(ErrorKind::kInvalidArgument, "linear state: {} checkpoints per slot", checkpoints_per_slot);
  if (extra_rows < 0) fail(ErrorKind::kInvalidArgument, "linear state: {} extra rows", extra_rows);
  const int64_t rows = max_slots * (1 + checkpoints_per_slot) + extra_rows;  // sequence slots, checkpoints, extra
  for (int64_t l = 0; l < c.num_linear_attention_layers(); ++l) {
    Buffer cb = backend.alloc(static_cast<size_t>(rows * (c.linear_conv_kernel - 1) * c.linear_conv_dim()) * 4);
    conv_.push_back(Tensor::make(cb.data(), DType::kF32, {rows, c.linear_conv_kernel - 1, c.linear_conv_dim()},
                                 backend.device()));
    Buffer rb = backend.alloc(static_cast<size_t>(rows * c.linear_num_value_heads * c.linear_key_head_dim *
                                                  c.linear_value_head_dim) * 4);
    rec_.push_back(Tensor::make(rb.data(), DType::kF32,
                                {rows, c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim},
                                backend.device()));
    buffers_.push_back(std::move(cb));
    buffers_.push_back(std::move(rb));
  }
  for (int64_t s = max_slots - 1; s >= 0; --s) free_.push_back(static_cast<int32_t>(s));
  // Slot s starts with row s live and rows max_slots + s·checkpoints + j as its checkpoints.
  for (int64_t s = 0; s < max_slots; ++s) {
    rows_.push_back(static_cast<int32_t>(s));
    for (int64_t j = 0; j < checkpoints_per_slot; ++j)
      rows_.push_back(static_cast<int32_t>(max_slots + s * checkpoints_per_slot + j));
  }
}

int32_t LinearStateCache::acquire() {
  if (free_.empty()) fail(ErrorKind::kOutOfMemory, "all {} linear-attention state slots are in use", max_slots_);
  int32_t s = free_.back();
  free_.pop_back();
  for (StateMirror* m : mirrors_) m->zero_row(row(s));
  zero_row(row(s));
  return s;
}

void LinearStateCache::adopt_checkpoint(int32_t slot, int64_t j) {
  if (slot < 0 || slot >= max_slots_ || j < 0 || j >= checkpoints_)
    fail(ErrorKind::kInvalidArgument, "linear state: checkpoint {} of slot {} (slots {}, {} checkpoints each)", j, slot,
         max_slots_, checkpoints_);
  const size_t base = static_cast<size_t>(slot * (1 + checkpoints_));
  std::swap(rows_[base], rows_[base + 1 + static_cast<size_t>(j)]);
}

void LinearStateCache::zero_row(int32_t row) {
  backend_.bind_thread();  // the calling thread may be another rank's (a mirrored operation)
  for (size_t l = 0; l < conv_.size(); ++l) {
    backend_.zero(conv_[l].slice0(row, row + 1));
    backend_.zero(rec_[l].slice0(row, row + 1));
  }
}

void LinearStateCache::mirror_to(LinearStateCache& follower) {
  if (&follower == this || follower.max_slots_ != max_slots_ || follower.checkpoints_ != checkpoints_ ||
      follower.extra_ != extra_ || follower.conv_.size() != conv_.size())
    fail(ErrorKind::kInvalidArgument,
         "linear state mirror: {} slots, {} checkpoints per slot, {} extra rows, {} layers; the mirror has {}, {}, {}, {}",
         max_slots_, checkpoints_, extra_, conv_.size(), follower.max_slots_, follower.checkpoints_, follower.extra_,
         follower.conv_.size());
  mirrors_.push_back(&follower);
}

void LinearStateCache::mirror_to(StateMirror& mirror) { mirrors_.push_back(&mirror); }

void LinearStateCache::release(int32_t slot) { free_.push_back(slot); }

void LinearStateCache::copy_slot(int32_t dst, int32_t src) {
  for (StateMirror* m : mirrors_) m->copy_slot(dst, src);
  backend_.bind_thread();  // after the mirrors, which bound theirs
  for (size_t l = 0; l < conv_.size(); ++l) {
    backend_.copy(conv_[l].slice0(dst, dst + 1), conv_[l].slice0(src, src + 1));
    backend_.copy(rec_[l].slice0(dst, dst + 1), rec_[l].slice0(src, src + 1));
  }
}

}  // namespace ninfer
