#include "bench/common/artifact_rewrite.h"

namespace ninfer::bench {

int64_t rewrite_artifact(const std::string& src, const std::string& dst, const nlohmann::json& metadata_patch,
                         const TensorRewrite& rewrite, bool show_progress) {
  Artifact a = Artifact::open(src);
  nlohmann::json meta = a.metadata();
  meta.erase("tensors");
  meta.erase("blobs");
  if (!metadata_patch.is_null()) meta.merge_patch(metadata_patch);
  ArtifactWriter writer(meta);
  int64_t rewritten = 0;
  for (const TensorInfo& t : a.tensors()) {
    const std::span<const std::byte> bytes = a.data(t);
    if (std::optional<TensorEntry> e = rewrite(t, bytes)) {
      writer.add_tensor(std::move(*e));
      ++rewritten;
    } else {
      writer.add_tensor(TensorEntry{t.name, t.section, t.dtype, t.shape,
                                    [bytes](const ByteSink& sink) { sink(bytes); }});
    }
  }
  for (const BlobInfo& b : a.blobs()) writer.add_blob(b.name, std::string(*a.blob(b.name)));
  writer.write(dst, show_progress);
  return rewritten;
}

}  // namespace ninfer::bench
