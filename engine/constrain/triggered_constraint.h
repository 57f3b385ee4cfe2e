// Owns constraining one part of an output: free text until a trigger token is output (a tool call's <tool_call>), then
// a grammar that begins with that token's bytes (the call, its arguments typed by their schemas), as tool_choice "auto"
// with strict tools asks: the model decides whether to call, and a call it makes is well formed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/constrain/grammar_constraint.h"

namespace ninfer::constrain {

struct TriggeredConstraintOptions {
  int32_t trigger = -1;                 // the token that opens the constrained part (its bytes begin the grammar)
  std::vector<int32_t> end_ids;         // tokens that end the output: free before the trigger, where complete after
  std::optional<int32_t> start_after;   // triggers count only after this token (</think>): reasoning stays free text
};

class TriggeredConstraint final : public LogitConstraint {
 public:
  // `grammar` must accept the trigger token's bytes first (tool_call_grammar's calls begin with "<tool_call>").
  TriggeredConstraint(std::shared_ptr<CompiledGrammar> grammar, TriggeredConstraintOptions options);
  // With an output limit the trigger is ruled out once a call opened by it could no longer be finished in time, and a
  // call that was opened ends in time (GrammarConstraint's rule).
  void start(int64_t max_output_tokens) override { limit_ = max_output_tokens; }
  bool ready() override { return !inner_ || inner_->ready(); }  // free text needs no walk
  void mask(std::span<float> logits) override;
  void accept(int32_t id) override;
  bool triggered() const { return inner_ != nullptr; }
  // The output tokens a call needs at least, counted as GrammarConstraint counts them (a byte per token, plus its
  // margin, the trigger and the end): the trigger is allowed only while this many tokens are left.
  int64_t room_needed() const { return needed_; }

 private:
  std::shared_ptr<CompiledGrammar> grammar_;
  TriggeredConstraintOptions options_;
  bool started_;            // past start_after (or none)
  int64_t limit_ = 0;       // the output limit (0: none known)
  int64_t produced_ = 0;    // output tokens so far
  int64_t needed_ = 0;      // tokens a call needs at least, the trigger and the end token included
  std::unique_ptr<GrammarConstraint> inner_;  // the constrained part, once triggered
};

}  // namespace ninfer::constrain
