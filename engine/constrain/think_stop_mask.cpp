// Owns keeping a request from ending inside its open think block (ThinkStopMask).
#include "engine/constrain/think_stop_mask.h"

#include <algorithm>
#include <limits>

namespace ninfer {

ThinkStopMask::ThinkStopMask(std::vector<int32_t> stop_ids, int32_t end_think, std::shared_ptr<LogitConstraint> inner)
    : stop_ids_(std::move(stop_ids)), end_think_(end_think), inner_(std::move(inner)) {}

void ThinkStopMask::start(int64_t max_output_tokens) {
  if (inner_) inner_->start(max_output_tokens);
}

void ThinkStopMask::mask(std::span<float> logits) {
  if (open_)
    for (int32_t id : stop_ids_)
      if (id >= 0 && static_cast<size_t>(id) < logits.size())
        logits[static_cast<size_t>(id)] = -std::numeric_limits<float>::infinity();
  if (inner_) inner_->mask(logits);
}

bool ThinkStopMask::banned_ids(std::span<const int32_t> ahead, std::vector<int32_t>& ids) const {
  if (inner_) return false;
  if (open_ && std::find(ahead.begin(), ahead.end(), end_think_) == ahead.end())
    ids.insert(ids.end(), stop_ids_.begin(), stop_ids_.end());
  return true;
}

void ThinkStopMask::accept(int32_t id) {
  if (id == end_think_) open_ = false;
  if (inner_) inner_->accept(id);
}

}  // namespace ninfer
