// Owns reading a .ninfer artifact: mapping, header/table validation, zero-copy tensor and blob views.
#pragma once

#include <cstdint>
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
  bool show_progress = true;      // progress bar while verifying
};

class Artifact {
 public:
  // Maps and validates the file. Every failure is an Error whose message names the file and, where
  // there is one, the tensor and the absolute byte offset.
  static Artifact open(const std::string& utf8_path, const OpenOptions& options = {});

  const std::string& path() const { return file_.path(); }
  uint64_t file_bytes() const { return file_.size(); }
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
  uint32_t version_ = 0;
  uint64_t meta_offset_ = 0, meta_bytes_ = 0, data_offset_ = 0, data_bytes_ = 0;
  nlohmann::json meta_;
  std::vector<TensorInfo> tensors_;
  std::vector<BlobInfo> blobs_;
  std::unordered_map<std::string, size_t> by_name_;
};

}  // namespace ninfer
