// Owns reading a reference fixture's ModelConfig (tests/data/reference/models/<name>/config.json) without packing it.
#pragma once

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/model/model_config.h"

namespace ninfer::testing {

inline ModelConfig fixture_config(const std::string& name) {
  const std::string path = std::string(NINFER_TEST_DATA) + "/reference/models/" + name + "/config.json";
  std::ifstream in(path);
  return ModelConfig::from_hf_json(nlohmann::json::parse(in), path);
}

}  // namespace ninfer::testing
