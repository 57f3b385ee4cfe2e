// Fuzz target: a checkpoint's config.json (ninfer-pack reads it from the user's checkpoint, ninfer-serve --plan-config
// from a path). from_hf_json either throws ninfer::Error or returns a config whose sizes are positive and whose layer
// list has one entry per layer.
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/model/model_config.h"
#include "tests/fuzz/fuzz_common.h"

NINFER_FUZZ_TARGET {
  const nlohmann::json j = nlohmann::json::parse(ninfer::fuzz::as_text(data, size), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    const ninfer::ModelConfig c = ninfer::ModelConfig::from_hf_json(j, "config.json");
    NINFER_FUZZ_CHECK(c.vocab_size > 0 && c.hidden_size > 0 && c.intermediate_size > 0 && c.num_layers > 0);
    NINFER_FUZZ_CHECK(c.num_heads > 0 && c.num_kv_heads > 0 && c.num_heads % c.num_kv_heads == 0 && c.head_dim > 0);
    NINFER_FUZZ_CHECK(static_cast<int64_t>(c.layer_types.size()) == c.num_layers);
    NINFER_FUZZ_CHECK(c.rotary_dim > 0 && c.rotary_dim <= c.head_dim);
  } catch (const ninfer::Error&) {
  }
  return 0;
}
