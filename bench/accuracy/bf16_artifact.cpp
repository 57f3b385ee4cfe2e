#include "bench/accuracy/bf16_artifact.h"

#include <cstring>
#include <vector>

#include "bench/common/artifact_rewrite.h"
#include "engine/core/half.h"

namespace ninfer::bench {

int64_t write_bf16_artifact(const std::string& src, const std::string& dst) {
  return rewrite_artifact(src, dst, nullptr, [](const TensorInfo& t, std::span<const std::byte> bytes) -> std::optional<TensorEntry> {
    if (t.dtype != DType::kF32 && t.dtype != DType::kF16) return std::nullopt;
    return TensorEntry{t.name, t.section, DType::kBF16, t.shape, [bytes, from = t.dtype](const ByteSink& sink) {
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
    }};
  }, false);
}

}  // namespace ninfer::bench
