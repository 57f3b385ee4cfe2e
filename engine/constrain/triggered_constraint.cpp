#include "engine/constrain/triggered_constraint.h"

#include <limits>

#include "engine/core/error.h"

namespace ninfer::constrain {

TriggeredConstraint::TriggeredConstraint(std::shared_ptr<CompiledGrammar> grammar, TriggeredConstraintOptions options)
    : grammar_(std::move(grammar)), options_(std::move(options)), started_(!options_.start_after.has_value()) {
  if (!grammar_->vocab().eligible(options_.trigger))
    fail(ErrorKind::kInvalidArgument, "triggered constraint: trigger token {} is not one the grammar can take",
         options_.trigger);
  const GrammarMatcher& m = grammar_->masks().matcher();
  // The whole call in bytes (one token covers at least one byte), the margin GrammarConstraint keeps, and the end.
  needed_ = static_cast<int64_t>(m.shortest_completion(m.start())) + completion_window(*grammar_) + 2;
}

void TriggeredConstraint::mask(std::span<float> logits) {
  if (inner_) return inner_->mask(logits);
  if (!started_ || limit_ <= 0 || limit_ - produced_ > needed_) return;  // free text, or far from the limit
  if (static_cast<size_t>(options_.trigger) < logits.size())
    logits[static_cast<size_t>(options_.trigger)] = -std::numeric_limits<float>::infinity();
}

void TriggeredConstraint::accept(int32_t id) {
  ++produced_;
  if (inner_) return inner_->accept(id);
  if (!started_) {
    started_ = id == *options_.start_after;
    return;
  }
  if (id != options_.trigger) return;
  inner_ = std::make_unique<GrammarConstraint>(grammar_, GrammarConstraintOptions{.end_ids = options_.end_ids, .start_after = std::nullopt});
  if (limit_ > 0) inner_->start(limit_ - (produced_ - 1));  // what is left, the trigger included
  inner_->accept(id);
}

}  // namespace ninfer::constrain
