#include "bench/common/nvfp4_artifact.h"

#include <cstring>
#include <set>
#include <vector>

#include "bench/common/artifact_rewrite.h"
#include "engine/core/half.h"
#include "engine/model/model_artifact.h"
#include "engine/model/weight_schema.h"
#include "engine/quant/nvfp4.h"

namespace ninfer::bench {

int64_t write_nvfp4_artifact(const std::string& src, const std::string& dst) {
  std::set<std::string> quantize;
  {
    Artifact a = Artifact::open(src);
    for (const auto& w : expected_weights(load_model_config(a), false)) {
      const bool gate = w.name.ends_with("linear_attn.in_proj_a.weight") || w.name.ends_with("linear_attn.in_proj_b.weight");
      if (w.kind == WeightKind::kProjection && !gate) quantize.insert(w.name);
    }
  }
  const nlohmann::json patch = {
      {"quantization", {{"method", "nvfp4"}, {"source", "ninfer bench write_nvfp4_artifact"}}}};
  return rewrite_artifact(src, dst, patch, [&](const TensorInfo& t, std::span<const std::byte> bytes) -> std::optional<TensorEntry> {
    if (!quantize.count(t.name) || t.dtype != DType::kBF16 || t.shape.size() != 2) return std::nullopt;
    const uint64_t rows = static_cast<uint64_t>(t.shape[0]), cols = static_cast<uint64_t>(t.shape[1]);
    return TensorEntry{t.name, t.section, DType::kNVFP4, t.shape, [bytes, rows, cols, shape = t.shape](const ByteSink& sink) {
      std::vector<float> f(rows * cols);
      std::vector<uint16_t> h(rows * cols);
      std::memcpy(h.data(), bytes.data(), h.size() * 2);
      bf16_to_f32(h.data(), f.data(), f.size());
      std::vector<std::byte> out(nvfp4_layout(shape)->total_bytes);
      quantize_nvfp4(f.data(), rows, cols, out);
      sink(out);
    }};
  }, true);
}

}  // namespace ninfer::bench
