// Owns reading a .ninfer artifact: mapping, header/table validation, zero-copy tensor and blob views.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/artifact/dtype.h"
#include "engine/artifact/mapped_file.h"

namespace ninfer {

struct TensorInfo {
  std::string name;
  std::string section;  // one of artifact_format::kSections
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // relative to the data region
  uint64_t bytes = 0;
  uint64_t checksum = 0;  // XXH3-64 of the bytes
};

struct BlobInfo {
  std::string name;  // e.g. "tokenizer.json"
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint64_t checksum = 0;
};

struct OpenOptions {
  bool verify_checksums = false;  // hash every tensor and blob (the `--verify` flag); header checks always run
  bool show_progress = true;      // progress bar while copying or verifying
  // Copy every section into huge-page host memory (make_resident) instead of reading the weights from the mapping.
  bool resident = false;
};

class Artifact {
 public:
  // Maps and validates the file (and with options.resident copies it, make_resident). Every failure is an Error
  // whose message names the file and, where there is one, the tensor and the absolute byte offset.
  static Artifact open(const std::string& utf8_path, const OpenOptions& options = {});

  const std::string& path() const { return file_.path(); }
  uint64_t file_bytes() const { return file_.size(); }
  // Copies the tensors of `sections` (artifact_format::kSections; empty: all of them) out of the mapping into host
  // memory (aligned_host at the file's offsets: huge-page advised), where data() then points for them. A decode step
  // streams every weight once per token, and from such memory it runs faster than from the mapping's 4 KiB page-cache
  // pages (docs/benchmarks.md, "Where the weights live"); the cost is that the copy stays resident, where mapped pages
  // are cache the kernel may drop. Tensors named in `keep_mapped` (under CPU tensor parallelism, those every rank
  // copies into its own shard), other sections and the blobs stay mapped. Views taken before the call keep pointing
  // into the mapping (valid, but not the copy): call it before binding weights. Tensors already resident are kept;
  // Error(kOutOfMemory) naming the file and the bytes when the copy cannot be allocated.
  void make_resident(std::span<const std::string_view> sections = {}, std::span<const std::string> keep_mapped = {},
                     bool show_progress = true);
  // Whether data(t) points into the resident copy; the bytes of the tensors there (0 while everything is mapped).
  bool resident(const TensorInfo& t) const;
  uint64_t resident_bytes() const { return resident_bytes_; }
  uint32_t version() const { return version_; }
  uint64_t data_offset() const { return data_offset_; }

  // The whole metadata document (config, generation defaults, chat template, quantization, ...).
  const nlohmann::json& metadata() const { return meta_; }
  // metadata()["config"]: the model's config.json as packed.
  const nlohmann::json& config() const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::vector<BlobInfo>& blobs() const { return blobs_; }
  const TensorInfo* find(std::string_view name) const;
  // Like find(), but a missing tensor is an Error naming the file and the tensor.
  const TensorInfo& require(std::string_view name) const;

  std::span<const std::byte> data(const TensorInfo& t) const;
  uint64_t absolute_offset(const TensorInfo& t) const { return data_offset_ + t.offset; }
  // Blob bytes as text (tokenizer.json); nullopt when the artifact has no such blob.
  std::optional<std::string_view> blob(std::string_view name) const;

  // Hashes every tensor and blob; throws on the first mismatch, naming tensor and offset.
  void verify(bool show_progress = true) const;

 private:
  Artifact() = default;
  void parse_header();
  void parse_metadata();
  void check_layout();
  [[noreturn]] void fail_at(uint64_t offset, std::string_view what) const;

  MappedFile file_;
  std::shared_ptr<void> resident_;  // file-sized; only the resident tensors' ranges are written (and backed)
  std::vector<char> resident_tensor_;  // per tensors_ entry
  uint64_t resident_bytes_ = 0;
  uint32_t version_ = 0;
  uint64_t meta_offset_ = 0, meta_bytes_ = 0, data_offset_ = 0, data_bytes_ = 0;
  nlohmann::json meta_;
  std::vector<TensorInfo> tensors_;
  std::vector<BlobInfo> blobs_;
  std::unordered_map<std::string, size_t> by_name_;
};

}  // namespace ninfer
