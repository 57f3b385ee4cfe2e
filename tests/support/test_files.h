// Owns the test-side file helpers: temp dirs, raw file I/O, a minimal safetensors writer, tiny HF dirs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/hf/safetensors_writer.h"

namespace ninfer::testing {

// A fresh directory under the system temp dir, removed with everything in it at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& utf8_name) const;  // UTF-8 path of a file inside

 private:
  std::filesystem::path path_;
};

std::string read_file(const std::string& utf8_path);
// Every line of a JSONL file, parsed (a line that is not JSON throws); none for a missing file.
std::vector<nlohmann::json> read_jsonl(const std::string& utf8_path);
void write_file(const std::string& utf8_path, const std::string& bytes);

using StTensor = SafetensorsEntry;
using ninfer::make_safetensors;
// Deterministic pseudo-random bf16 bytes for `count` elements.
std::string random_bf16(uint64_t count, uint32_t seed);

// A tiny qwen3_5 text config (2 linear + 1 full attention layers, untied, one MTP layer).
nlohmann::json tiny_qwen35_config();
// Tensors (HF names) matching a config, bf16, built from the engine's own weight schema is NOT used
// here on purpose: the names are written out independently so the schema itself is under test.
std::map<std::string, StTensor> tiny_qwen35_tensors(const nlohmann::json& config, bool with_mtp,
                                                    const std::string& prefix = "model.");
// Writes config.json + model.safetensors (+ tokenizer files) into `dir`.
void write_hf_dir(const std::filesystem::path& dir, const nlohmann::json& config,
                  const std::map<std::string, StTensor>& tensors);

}  // namespace ninfer::testing
