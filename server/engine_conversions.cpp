#include "server/engine_conversions.h"

namespace ninfer::server {

ninfer::SamplingParams to_engine(const SamplingParams& s) {
  ninfer::SamplingParams e;
  e.greedy = s.greedy;
  e.temperature = static_cast<float>(s.temperature);
  e.top_k = s.top_k;
  e.top_p = static_cast<float>(s.top_p);
  e.min_p = static_cast<float>(s.min_p);
  e.presence_penalty = static_cast<float>(s.presence_penalty);
  e.frequency_penalty = static_cast<float>(s.frequency_penalty);
  e.repetition_penalty = static_cast<float>(s.repetition_penalty);
  e.seed = s.seed;
  e.logprobs = s.logprobs;
  e.top_logprobs = s.top_logprobs;
  for (const auto& [id, bias] : s.logit_bias) e.logit_bias.emplace_back(id, static_cast<float>(bias));
  return e;
}

FinalResult final_result(const RequestResult& r, const EngineSettings& settings) {
  FinalResult f;
  f.prompt_tokens = r.prompt_tokens;
  f.cached_tokens = r.cached_tokens;
  f.completion_tokens = r.completion_tokens;
  f.timings = {r.timings.queue_s, r.timings.prefill_s, r.timings.decode_s, r.timings.ttft_s, r.timings.total_s};
  switch (r.reason) {
    case FinishReason::kEos: f.stop_reason = StopReason::kEos; break;
    case FinishReason::kOutputLimit: f.stop_reason = StopReason::kOutputLimit; break;
    case FinishReason::kContextLimit: f.stop_reason = StopReason::kContextLimit; break;
    case FinishReason::kCancelled: f.stop_reason = StopReason::kCancelled; break;
    case FinishReason::kError: f.stop_reason = StopReason::kError, f.error = r.error; break;
  }
  if (settings.spec_method != "none")  // the engine speculates every request: zero counts are figures too
    f.spec = SpecStats{settings.spec_method, settings.draft_tokens, r.spec.verify_steps, r.spec.drafted_tokens,
                       r.spec.accepted_tokens, r.spec.accepted_at, settings.lm_head_draft ? "draft_lm_head" : "lm_head"};
  return f;
}

SubmitResult submit_result(const SubmitOutcome& o, int64_t prompt_tokens) {
  SubmitResult out;
  switch (o.status) {
    case SubmitStatus::kAccepted: out.handle = o.id; break;
    case SubmitStatus::kQueueFull: out.reject = RejectKind::kQueueFull; break;
    case SubmitStatus::kContextLength:
      out.reject = RejectKind::kContextLength, out.param = "messages", out.prompt_tokens = prompt_tokens;
      break;
    case SubmitStatus::kInvalid: out.reject = RejectKind::kInvalid; break;
  }
  out.message = o.message;
  return out;
}

EngineLoad engine_load(const Engine& engine) {
  EngineStats s = engine.stats();
  return {s.waiting, s.running, s.kv_blocks_used, s.kv_blocks_total, s.prefix.nodes, s.prefix.snapshots,
          s.kv_blocks_allocated, s.passed_over};
}

}  // namespace ninfer::server
