// Owns the engine's per-request constraint hook: a mask over the next token's logits that follows the output.
#pragma once

#include <cstdint>
#include <span>

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
  virtual void mask(std::span<float> logits) = 0;
  // Throws Error(kInternal) for a token mask() ruled out (a forced token the constraint cannot take).
  virtual void accept(int32_t id) = 0;
};

}  // namespace ninfer
