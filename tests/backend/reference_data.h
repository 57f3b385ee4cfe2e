// Owns test access to the golden fixtures under tests/data/reference (index.json + raw little-endian tensors).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ninfer::testing {

struct RefTensor {
  std::vector<int64_t> shape;
  std::vector<float> f32;    // when dtype is f32
  std::vector<int32_t> i32;  // when dtype is i32
  int64_t numel() const;
  int64_t dim(size_t i) const { return shape.at(i); }
};

// tests/data/reference
std::string reference_dir();
// The parsed index.json (cached).
const nlohmann::json& reference_index();
// Reads one FILE entry {"file", "dtype", "shape"} of the index; throws on a size mismatch.
RefTensor read_reference(const nlohmann::json& entry);
// The op dump of `model`/`layer` (an element of index["ops"]); throws when absent.
const nlohmann::json& reference_ops(const std::string& model, int layer);

}  // namespace ninfer::testing
