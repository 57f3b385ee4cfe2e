#include "bench/accuracy/bf16_artifact.h"

#include <cstring>
#include <vector>

#include "engine/artifact/artifact.h"
#include "engine/artifact/artifact_writer.h"
#include "engine/core/half.h"

namespace ninfer::bench {

int64_t write_bf16_artifact(const std::string& src, const std::string& dst) {
  Artifact a = Artifact::open(src);
  nlohmann::json meta = a.metadata();
  meta.erase("tensors");
  meta.erase("blobs");
  ArtifactWriter writer(meta);
  int64_t converted = 0;
  for (const TensorInfo& t : a.tensors()) {
    TensorEntry e{t.name, t.section, t.dtype, t.shape, {}};
    const std::span<const std::byte> bytes = a.data(t);
    if (t.dtype == DType::kF32 || t.dtype == DType::kF16) {
      e.dtype = DType::kBF16;
      e.produce = [bytes, from = t.dtype](const ByteSink& sink) {
        const size_t n = bytes.size() / (from == DType::kF32 ? 4 : 2);
        std::vector<float> f(n);
        if (from == DType::kF32) {
          std::memcpy(f.data(), bytes.data(), n * 4);
        } else {
          std::vector<uint16_t> h(n);
          std::memcpy(h.data(), bytes.data(), n * 2);
          f16_to_f32(h.data(), f.data(), n);
        }
        std::vector<uint16_t> out(n);
        f32_to_bf16(f.data(), out.data(), n);
        sink(std::as_bytes(std::span(out)));
      };
      ++converted;
    } else {
      e.produce = [bytes](const ByteSink& sink) { sink(bytes); };
    }
    writer.add_tensor(std::move(e));
  }
  for (const BlobInfo& b : a.blobs()) writer.add_blob(b.name, std::string(*a.blob(b.name)));
  writer.write(dst, false);
  return converted;
}

}  // namespace ninfer::bench
