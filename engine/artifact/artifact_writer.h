// Owns writing a .ninfer artifact: layout, checksums, and the atomic temporary-file-then-rename commit.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/artifact/dtype.h"

namespace ninfer {

// Receives a tensor's bytes, possibly in several pieces.
using ByteSink = std::function<void(std::span<const std::byte>)>;

struct TensorEntry {
  std::string name;
  std::string section = "main";
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  // Streams exactly tensor_storage_bytes(dtype, shape) bytes into the sink. Called once, while writing.
  std::function<void(const ByteSink&)> produce;
};

class ArtifactWriter {
 public:
  // `metadata` is everything but "tensors" and "blobs", which the writer fills in. It must hold
  // "config" (the model's config.json object).
  explicit ArtifactWriter(nlohmann::json metadata);

  // Throws on a duplicate name, an unknown section or a shape the dtype cannot hold.
  void add_tensor(TensorEntry entry);
  void add_blob(std::string name, std::string bytes);

  // Writes `<path>.partial-<pid>` next to `utf8_path`, fsyncs it and renames it over `utf8_path`.
  // On any failure the partial file is removed and `utf8_path` is left as it was. Returns file bytes.
  uint64_t write(const std::string& utf8_path, bool show_progress = true);

  uint64_t data_bytes() const;  // sum of tensor + blob bytes, before padding

 private:
  struct Pending {
    TensorEntry entry;
    uint64_t bytes = 0;
  };
  struct PendingBlob {
    std::string name;
    std::string bytes;
  };
  nlohmann::json meta_;
  std::vector<Pending> tensors_;
  std::vector<PendingBlob> blobs_;
};

}  // namespace ninfer
