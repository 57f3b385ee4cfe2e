#include "bench/common/nvfp4_artifact.h"

#include <cstring>
#include <set>
#include <vector>

#include "engine/artifact/artifact.h"
#include "engine/artifact/artifact_writer.h"
#include "engine/core/half.h"
#include "engine/model/model_artifact.h"
#include "engine/model/weight_schema.h"
#include "engine/quant/nvfp4.h"

namespace ninfer::bench {

int64_t write_nvfp4_artifact(const std::string& src, const std::string& dst) {
  Artifact a = Artifact::open(src);
  ModelConfig c = load_model_config(a);
  std::set<std::string> quantize;
  for (const auto& w : expected_weights(c, false)) {
    const bool gate = w.name.ends_with("linear_attn.in_proj_a.weight") || w.name.ends_with("linear_attn.in_proj_b.weight");
    if (w.kind == WeightKind::kProjection && !gate) quantize.insert(w.name);
  }
  nlohmann::json meta = a.metadata();
  meta.erase("tensors");
  meta.erase("blobs");
  meta["quantization"] = {{"method", "nvfp4"}, {"source", "ninfer bench write_nvfp4_artifact"}};
  ArtifactWriter writer(meta);
  int64_t quantized = 0;
  for (const TensorInfo& t : a.tensors()) {
    TensorEntry e{t.name, t.section, t.dtype, t.shape, {}};
    const std::span<const std::byte> bytes = a.data(t);
    if (quantize.count(t.name) && t.dtype == DType::kBF16 && t.shape.size() == 2) {
      e.dtype = DType::kNVFP4;
      const uint64_t rows = static_cast<uint64_t>(t.shape[0]), cols = static_cast<uint64_t>(t.shape[1]);
      e.produce = [bytes, rows, cols, shape = t.shape](const ByteSink& sink) {
        std::vector<float> f(rows * cols);
        std::vector<uint16_t> h(rows * cols);
        std::memcpy(h.data(), bytes.data(), h.size() * 2);
        bf16_to_f32(h.data(), f.data(), f.size());
        std::vector<std::byte> out(nvfp4_layout(shape)->total_bytes);
        quantize_nvfp4(f.data(), rows, cols, out);
        sink(out);
      };
      ++quantized;
    } else {
      e.produce = [bytes](const ByteSink& sink) { sink(bytes); };
    }
    writer.add_tensor(std::move(e));
  }
  for (const BlobInfo& b : a.blobs()) writer.add_blob(b.name, std::string(*a.blob(b.name)));
  writer.write(dst, true);
  return quantized;
}

}  // namespace ninfer::bench
