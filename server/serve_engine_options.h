// Owns turning ninfer-serve's flags into the engine's options: the part the serving app and the memory plan share.
#pragma once

#include "engine/artifact/dtype.h"
#include "engine/model/model_config.h"
#include "engine/runtime/engine.h"
#include "server/serve_options.h"

namespace ninfer::server {

DType kv_dtype_of(KvDtype d);

// Context, chunk, concurrency, KV capacity and dtype, TP ranks, prefix reuse and snapshots. The app
// adds what needs the loaded model or the device (backend, threads, output ids, drafter).
EngineOptions engine_options_from(const ServeOptions& options, const ModelConfig& config);

}  // namespace ninfer::server
