// Owns one accuracy-benchmark variant: its engine pieces (backend, Model,
// KvCache, LinearStateCache, ModelRunner) and the teacher-forced forward of a
// token window through them, every position's logits kept.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/artifact/artifact.h"
#include "engine/backend/backend.h"
#include "engine/model/model.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/linear_state.h"
#include "engine/runtime/model_runner.h"

namespace ninfer::bench {

struct VariantSpec {
  std::string name; // "ref", "bf16kv", "int8kv", "int8kv-chunked", "w4a4",
                    // "w4a16", "w4a4-head", "w4a16-head"
  bool nvfp4_weights =
      false; // run on the NVFP4 artifact derived from the reference one
  bool nvfp4_head = false; // ... the one whose lm_head is nvfp4 too
                           // (ninfer-pack --quant-lm-head nvfp4)
  Nvfp4Activations activations = Nvfp4Activations::kNvfp4;
  DType kv_dtype = DType::kF32;
  int64_t prefill_chunk =
      0; // tokens per step; 0 = the whole window in one step
};

// The variants the benchmark knows, by name (the reference "ref" is always run
// and is not in this list). `small_chunk` is the prefill chunk of
// "int8kv-chunked". Throws Error(kInvalidArgument) for an unknown name.
VariantSpec variant_spec(const std::string &name, int64_t small_chunk);
const std::vector<std::string> &known_variants();

class VariantRunner {
public:
  // `artifact` must outlive the runner. The KV cache holds one window of
  // `window` tokens.
  VariantRunner(const Artifact &artifact, const ModelConfig &config,
                const VariantSpec &spec, int threads, int64_t window);

  // A fresh sequence (empty KV blocks, zeroed linear state) fed `tokens` from
  // position 0 in steps of the spec's prefill chunk, every row's logits asked
  // for, exactly as the engine's prefill steps call ModelRunner::step. `logits`
  // receives [tokens.size(), vocab] row-major. The sequence is released
  // afterwards.
  void run(std::span<const int32_t> tokens, std::vector<float> &logits);

  const VariantSpec &spec() const { return spec_; }
  double seconds() const { return seconds_; } // forward wall time so far
  int64_t forwarded_tokens() const { return tokens_; }

private:
  VariantSpec spec_;
  int64_t vocab_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<KvCache> kv_;
  std::unique_ptr<LinearStateCache> state_;
  std::unique_ptr<ModelRunner> runner_;
  SeqId next_seq_ = 1;
  double seconds_ = 0;
  int64_t tokens_ = 0;
};

} // namespace ninfer::bench
