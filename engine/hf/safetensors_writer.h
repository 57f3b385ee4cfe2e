// Owns writing the safetensors format (synthetic checkpoints for benchmarks and tests).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ninfer {

struct SafetensorsEntry {
  std::string dtype;  // safetensors dtype string: "BF16", "F32", ...
  std::vector<int64_t> shape;
  std::string bytes;  // raw little-endian data
};

// The whole file in memory: 8-byte header length, JSON header padded with spaces to 8 bytes, data in
// name order. `metadata` goes under "__metadata__".
std::string make_safetensors(const std::map<std::string, SafetensorsEntry>& tensors,
                             const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// Streams a large file: `fill(name, out)` appends exactly the tensor's bytes to `out` (called in name
// order, one tensor at a time). Throws Error(kIo) naming the path.
struct SafetensorsSpec {
  std::string dtype;
  std::vector<int64_t> shape;
};
void write_safetensors(const std::string& utf8_path, const std::map<std::string, SafetensorsSpec>& tensors,
                       const std::function<void(const std::string& name, std::string& out)>& fill);

}  // namespace ninfer
