// Owns reading a Hugging Face checkpoint directory: config, tokenizer, template, generation defaults, shards.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/hf/safetensors.h"

namespace ninfer {

struct HfCheckpoint {
  std::string dir;
  nlohmann::json config;                    // config.json
  nlohmann::json generation_config;         // generation_config.json, or null
  nlohmann::json tokenizer_config;          // tokenizer_config.json, or null
  nlohmann::json hf_quant_config;           // hf_quant_config.json (ModelOpt exports), or null
  std::optional<std::string> tokenizer_json;  // tokenizer.json bytes as they are
  std::optional<std::string> chat_template;   // chat_template.jinja, else tokenizer_config["chat_template"]
  std::vector<SafetensorsFile> shards;
  // Tensor name → (shard index, tensor). Built from every shard; a name in two shards is an error.
  std::map<std::string, const SafetensorsTensor*> tensors;

  uint64_t tensor_bytes() const;

  // Reads `utf8_dir`. model.safetensors.index.json is used when present (every shard it names must
  // exist), else model.safetensors. Throws Error naming the file at fault.
  static HfCheckpoint open(const std::string& utf8_dir);
};

}  // namespace ninfer
