// Owns the list of tensors a model config implies (names, shapes, sections) and
// the check against it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/artifact/dtype.h"
#include "engine/model/model_config.h"

namespace ninfer {

enum class WeightKind {
  kProjection, // a Linear weight [out, in]: f32/f16/bf16, or nvfp4 once
               // quantized
  kEmbedding,  // token embedding [vocab, hidden]: f32/f16/bf16
  kLmHead,     // lm_head [vocab, hidden]: f32/f16/bf16, or nvfp4 (ninfer-pack
               // --quant-lm-head nvfp4)
  kParameter,  // norms, conv taps, A_log, dt_bias: f32/f16/bf16
};

struct ExpectedWeight {
  std::string name;    // canonical artifact name, e.g.
                       // "model.layers.3.self_attn.q_proj.weight"
  std::string section; // "main" or "mtp"
  std::vector<int64_t> shape;
  WeightKind kind = WeightKind::kParameter;
};

// lm_head.weight as the config implies it (expected when the embedding is not
// tied).
ExpectedWeight lm_head_weight(const ModelConfig &config);

// Every tensor the text model needs; the mtp section's tensors when
// `include_mtp`.
std::vector<ExpectedWeight> expected_weights(const ModelConfig &config,
                                             bool include_mtp);

struct FoundWeight {
  DType dtype;
  std::vector<int64_t> shape;
};
using WeightLookup =
    std::function<std::optional<FoundWeight>(const std::string &name)>;

// Checks presence, shape and dtype of every expected weight. The mtp section is
// checked when any of its tensors is present (it is optional, but
// all-or-nothing). A tied model's stored lm_head.weight (the engine uses it
// over the embedding) is checked as an untied one's. Throws Error naming
// `source`, the tensor, and the expected vs found shape or dtype.
void check_weights(const ModelConfig &config, const WeightLookup &lookup,
                   const std::string &source);

// True when `dtype` may hold a weight of `kind`.
bool dtype_allowed(WeightKind kind, DType dtype);

} // namespace ninfer
