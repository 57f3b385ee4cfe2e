// Owns the engine's per-request constraint hook: a mask over the next token's logits that follows the output.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ninfer {

// Run on the engine thread for one request. Before each sampled or verified output row, mask() sets the logits of
// every token the constraint rules out to -inf; after each appended output token (sampled, accepted draft or forced)
// accept() advances it. Speculative verification masks row j after accepting the tokens committed before it, so a
// draft token the constraint rules out is rejected like any token of probability zero.
class LogitConstraint {
 public:
  virtual ~LogitConstraint() = default;
  // Called once at submission: the most output tokens the request may produce (max_tokens, or what the context
  // leaves). A constraint may use it to end its output in time.
  virtual void start(int64_t max_output_tokens) { (void)max_output_tokens; }
  // Whether the next mask() is cheap: false when it would first have to do long work on the calling thread (a
  // grammar's vocabulary walk that its mask worker has not done yet). A constraint that says false has asked that
  // work of its worker first, ahead of any other; the engine then passes over the request for the step when other
  // requests can run (docs/constrained-decoding.md), and asks again at the next step. mask() works either way.
  virtual bool ready() { return true; }
  virtual void mask(std::span<float> logits) = 0;
  // Whether the mask after accepting `ahead` (tokens not accepted yet: a verification block's earlier drafts) sets a
  // fixed set of ids to −inf and nothing else; if so, appends those ids to `ids` (any order; ids past the logits are
  // ignored). Then the sampler applies it as logit edits (Sampler::logit_edits), also on a device, and the rows need
  // not leave it. A constraint that answers true for no `ahead` answers true for any. Default: false.
  virtual bool banned_ids(std::span<const int32_t> ahead, std::vector<int32_t>& ids) const {
    (void)ahead, (void)ids;
    return false;
  }
  // Throws Error(kInternal) for a token mask() ruled out (a forced token the constraint cannot take).
  virtual void accept(int32_t id) = 0;
};

}  // namespace ninfer
