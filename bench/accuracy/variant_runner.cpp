#include "bench/accuracy/variant_runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "engine/core/error.h"

namespace ninfer::bench {

const std::vector<std::string> &known_variants() {
  static const std::vector<std::string> names = {
      "bf16kv", "int8kv",    "int8kv-chunked", "w4a4",
      "w4a16",  "w4a4-head", "w4a16-head"};
  return names;
}

VariantSpec variant_spec(const std::string &name, int64_t small_chunk) {
  if (name == "ref")
    return {.name = name};
  if (name == "bf16kv")
    return {.name = name, .kv_dtype = DType::kBF16};
  if (name == "int8kv")
    return {.name = name, .kv_dtype = DType::kI8};
  if (name == "int8kv-chunked")
    return {.name = name, .kv_dtype = DType::kI8, .prefill_chunk = small_chunk};
  if (name == "w4a4")
    return {.name = name,
            .nvfp4_weights = true,
            .activations = Nvfp4Activations::kNvfp4};
  if (name == "w4a16")
    return {.name = name,
            .nvfp4_weights = true,
            .activations = Nvfp4Activations::kFloat};
  if (name == "w4a4-head")
    return {.name = name,
            .nvfp4_weights = true,
            .nvfp4_head = true,
            .activations = Nvfp4Activations::kNvfp4};
  if (name == "w4a16-head")
    return {.name = name,
            .nvfp4_weights = true,
            .nvfp4_head = true,
            .activations = Nvfp4Activations::kFloat};
  std::string all;
  for (const auto &v : known_variants())
    all += (all.empty() ? "" : ", ") + v;
  fail(ErrorKind::kInvalidArgument,
       "--variants: unknown variant '{}' (known: {})", name, all);
}

VariantRunner::VariantRunner(const Artifact &artifact,
                             const ModelConfig &config, const VariantSpec &spec,
                             int threads, int64_t window)
    : spec_(spec), vocab_(config.vocab_size) {
  if (window <= 0)
    fail(ErrorKind::kInvalidArgument,
         "variant {}: window must be positive, got {}", spec.name, window);
  if (spec_.prefill_chunk < 0)
    fail(ErrorKind::kInvalidArgument,
         "variant {}: prefill chunk must be ≥ 0, got {}", spec.name,
         spec_.prefill_chunk);
  backend_ = make_cpu_backend(
      {.threads = threads, .nvfp4_activations = spec_.activations});
  model_ = std::make_unique<Model>(config, ModelWeights::bind(artifact, config),
                                   *backend_);
  const int64_t block = 16;
  kv_ = std::make_unique<KvCache>(
      *backend_, config,
      KvCacheConfig{.block_size = block,
                    .num_blocks = (window + block - 1) / block,
                    .dtype = spec_.kv_dtype});
  state_ = std::make_unique<LinearStateCache>(*backend_, config, 1);
  runner_ = std::make_unique<ModelRunner>(*model_, *kv_, *state_);
}

void VariantRunner::run(std::span<const int32_t> tokens,
                        std::vector<float> &logits) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t chunk = spec_.prefill_chunk > 0 ? spec_.prefill_chunk : n;
  logits.resize(static_cast<size_t>(n * vocab_));
  const SeqId id = next_seq_++;
  const int32_t slot = state_->acquire();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    for (int64_t start = 0; start < n; start += chunk) {
      const int64_t len = std::min(chunk, n - start);
      SequenceStep step;
      step.id = id, step.state_row = state_->row(slot), step.start = start,
      step.all_logits = true;
      step.tokens =
          tokens.subspan(static_cast<size_t>(start), static_cast<size_t>(len));
      std::span<const float> out = runner_->step(std::span(&step, 1));
      if (static_cast<int64_t>(out.size()) != len * vocab_)
        fail(ErrorKind::kInternal,
             "variant {}: step returned {} logits, expected {} rows of {}",
             spec_.name, out.size(), len, vocab_);
      std::memcpy(logits.data() + start * vocab_, out.data(),
                  out.size() * sizeof(float));
    }
  } catch (...) {
    kv_->release(id);
    state_->release(slot);
    throw;
  }
  seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  tokens_ += n;
  kv_->release(id);
  state_->release(slot);
}

} // namespace ninfer::bench
