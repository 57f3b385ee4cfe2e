// Owns keeping a request from ending inside its open think block: its stop ids are ruled out until </think>.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/constrain/logit_constraint.h"

namespace ninfer {

// For a prompt that left <think> open (the chat template's generation prompt): until the output holds `end_think`
// (sampled, or forced by the reasoning budget), every id of `stop_ids` gets -inf, so the request cannot end with an
// empty answer; afterwards it masks nothing. `inner` (may be null: structured output's constraint) masks and follows
// the same output after this mask, unchanged.
class ThinkStopMask final : public LogitConstraint {
 public:
  ThinkStopMask(std::vector<int32_t> stop_ids, int32_t end_think, std::shared_ptr<LogitConstraint> inner);
  void start(int64_t max_output_tokens) override;
  bool ready() override { return !inner_ || inner_->ready(); }
  void mask(std::span<float> logits) override;
  // The stop ids while the block is open after `ahead`, none after it: true, unless an inner constraint masks too.
  bool banned_ids(std::span<const int32_t> ahead, std::vector<int32_t>& ids) const override;
  void accept(int32_t id) override;
  bool open() const { return open_; }

 private:
  std::vector<int32_t> stop_ids_;
  int32_t end_think_;
  std::shared_ptr<LogitConstraint> inner_;
  bool open_ = true;
};

}  // namespace ninfer
