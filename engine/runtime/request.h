// Owns the engine's request types: what a caller submits, the tokens it gets back, how a request ends.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/constrain/logit_constraint.h"
#include "engine/runtime/sampling.h"
#include "engine/speculative/spec_stats.h"

namespace ninfer {

using RequestId = uint64_t;  // 0 is never a valid id

enum class FinishReason {
  kEos,           // a stop token id was generated
  kOutputLimit,   // max_tokens output tokens were produced
  kContextLimit,  // the sequence filled max_context
  kCancelled,     // cancel() (client gone, stop string matched upstream, server stopping)
  kError,         // the engine failed this request; RequestResult::error says why
};

// Seconds on a monotonic clock, from the moment submit() accepted the request.
struct RequestTimings {
  double queue_s = 0;    // accepted → first prefill chunk scheduled
  double prefill_s = 0;  // first prefill chunk scheduled → prompt fully processed (cached tokens are not prefilled)
  double decode_s = 0;   // first output token → last output token
  double ttft_s = 0;     // accepted → first output token
  double total_s = 0;    // accepted → finished
};

// An optional per-request hook, run on the engine thread after every appended output token (sampled
// or forced). It returns tokens to append next without sampling (e.g. "\n</think>\n\n" when the
// reasoning budget is spent); they count as output tokens and are reported with forced = true.
class TokenController {
 public:
  virtual ~TokenController() = default;
  virtual std::vector<int32_t> after_token(int32_t id) = 0;
};

struct EngineRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int64_t max_tokens = 0;             // 0 = up to the context limit
  std::vector<int32_t> stop_ids;      // generating one of these ends the request (kEos); it is reported
  std::shared_ptr<TokenController> controller;
  // Masks every output row and follows the output (structured output, forced tool calls); null = unconstrained.
  std::shared_ptr<LogitConstraint> constraint;
};

struct OutputToken {
  SampledToken token;
  bool forced = false;
};

struct RequestResult {
  FinishReason reason = FinishReason::kEos;
  std::string error;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens reused from the prefix cache (not prefilled)
  int64_t completion_tokens = 0;
  RequestTimings timings;
  SpecStats spec;  // speculative decoding of this request (all zero without a drafter)
};

// Receives a request's output on the engine thread. Calls for one request never overlap; on_finish comes
// exactly once, last. Implementations must not block and must not call back into the engine.
class RequestObserver {
 public:
  virtual ~RequestObserver() = default;
  virtual void on_tokens(std::span<const OutputToken> tokens) = 0;
  virtual void on_finish(const RequestResult& result) = 0;
};

enum class SubmitStatus { kAccepted, kQueueFull, kContextLength, kInvalid };

struct SubmitOutcome {
  RequestId id = 0;
  SubmitStatus status = SubmitStatus::kAccepted;
  std::string message;  // why it was refused, with the numbers
  bool accepted() const { return status == SubmitStatus::kAccepted; }
};

std::string_view finish_reason_name(FinishReason reason);

}  // namespace ninfer
