#include "server/serve_engine_options.h"

#include "engine/core/error.h"

namespace ninfer::server {

DType kv_dtype_of(KvDtype d) {
  switch (d) {
    case KvDtype::kInt8: return DType::kI8;
    case KvDtype::kBf16: return DType::kBF16;
    case KvDtype::kF16: return DType::kF16;
    case KvDtype::kF32: return DType::kF32;
  }
  fail(ErrorKind::kInvalidArgument, "--kv-dtype: unknown value");
}

EngineOptions engine_options_from(const ServeOptions& o, const ModelConfig& config) {
  EngineOptions eo;
  eo.max_context = o.max_context.value_or(config.max_position_embeddings);
  eo.prefill_chunk = o.prefill_chunk;
  eo.max_concurrency = o.max_concurrency;
  eo.kv_capacity = o.kv_capacity.value_or(0);
  eo.kv_dtype = kv_dtype_of(o.kv_dtype);
  eo.tp = o.tp;
  eo.prefix_cache = o.prefix_reuse;
  eo.prefix_snapshots = o.prefix_snapshots.value_or(0);
  return eo;
}

}  // namespace ninfer::server
