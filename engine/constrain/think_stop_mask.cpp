// Owns keeping a request from ending inside its open think block (ThinkStopMask).
#include "engine/constrain/think_stop_mask.h"

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

void ThinkStopMask::accept(int32_t id) {
  if (id == end_think_) open_ = false;
  if (inner_) inner_->accept(id);
}

}  // namespace ninfer
