// Owns the conversions between the server's request/result types (engine_port.h) and the token-level Engine's,
// shared by the EnginePort adapters (EngineService, TokenEngineService).
#pragma once

#include "engine/runtime/engine.h"
#include "engine/runtime/request.h"
#include "server/engine_port.h"

namespace ninfer::server {

ninfer::SamplingParams to_engine(const SamplingParams& s);

// The FinalResult of an engine result (reasoning_tokens left 0, the caller counts them); `settings` says whether the
// engine speculates (then the spec figures are set, zero counts included).
FinalResult final_result(const RequestResult& r, const EngineSettings& settings);

// The SubmitResult of an engine submission; `prompt_tokens` is reported with a context-length refusal.
SubmitResult submit_result(const SubmitOutcome& o, int64_t prompt_tokens);

EngineLoad engine_load(const Engine& engine);

}  // namespace ninfer::server
