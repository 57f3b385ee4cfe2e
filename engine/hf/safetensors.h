// Owns parsing one .safetensors file: its JSON header, dtype/shape/offset validation, zero-copy views.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/artifact/dtype.h"
#include "engine/artifact/mapped_file.h"

namespace ninfer {

struct SafetensorsTensor {
  std::string name;
  std::string st_dtype;        // as written: "BF16", "F32", "U8", ...
  std::optional<DType> dtype;  // the artifact dtype it maps to as-is; nullopt when it has none (F64, I64, U8, ...)
  std::vector<int64_t> shape;
  std::span<const std::byte> data;
  uint64_t file_offset = 0;  // absolute offset of the first byte in the file
};

class SafetensorsFile {
 public:
  // Maps and validates the file: header length within the file, JSON object, known dtypes, shapes
  // consistent with byte ranges, ranges inside the data buffer and not overlapping. Throws
  // Error(kCorrupt / kUnsupported) naming the file, the tensor and the offset.
  static SafetensorsFile open(const std::string& utf8_path);

  const std::string& path() const { return file_.path(); }
  uint64_t file_bytes() const { return file_.size(); }
  const std::map<std::string, SafetensorsTensor>& tensors() const { return tensors_; }
  const nlohmann::json& metadata() const { return metadata_; }  // "__metadata__" (or null)

 private:
  MappedFile file_;
  std::map<std::string, SafetensorsTensor> tensors_;
  nlohmann::json metadata_;
};

// Bytes per element of a safetensors dtype string; nullopt for an unknown dtype.
std::optional<uint64_t> safetensors_element_bytes(const std::string& st_dtype);

}  // namespace ninfer
