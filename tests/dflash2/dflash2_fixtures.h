// Owns the DFlash2 tests' access to the torch fixtures (tests/data/dflash2, tools/dflash2/make_golden.py).
#pragma once

#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/artifact/artifact.h"
#include "engine/backend/backend.h"
#include "engine/model/model_artifact.h"
#include "engine/model/model_weights.h"

namespace ninfer::dflash2_test {

inline const std::string kDir = std::string(NINFER_TEST_DATA) + "/dflash2/";
inline const std::string kArtifact = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";

inline nlohmann::json index_json() {
  std::ifstream in(kDir + "index.json");
  if (!in) throw std::runtime_error("cannot open " + kDir + "index.json");
  return nlohmann::json::parse(in);
}

template <typename T>
std::vector<T> read_fixture(const std::string& key) {
  const auto entry = index_json()["files"][key];
  std::ifstream in(kDir + entry["file"].get<std::string>(), std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot open fixture " + key);
  std::vector<T> v(static_cast<size_t>(in.tellg()) / sizeof(T));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  return v;
}

// The shipped artifact, its target weights, a CPU backend and the fixture text with its target features.
struct TargetFixture {
  Artifact artifact = Artifact::open(kArtifact);
  ModelConfig target = load_model_config(artifact);
  ModelWeights weights = ModelWeights::bind(artifact, target);
  std::unique_ptr<Backend> backend = make_cpu_backend({.threads = 2});
  WeightStore store{*backend};  // the CPU backend reads the artifact's views in place
  std::vector<int32_t> tokens = read_fixture<int32_t>("tokens");
  std::vector<float> features = read_fixture<float>("features");  // [context_tokens, n·H]
  int64_t ctx = index_json()["context_tokens"].get<int64_t>();
  int64_t short_ctx = index_json()["short_context"].get<int64_t>();
};

}  // namespace ninfer::dflash2_test
