// Owns loading a transformers reference fixture (tests/data/reference) into a ready-to-run CPU model.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/artifact/artifact.h"
#include "engine/backend/backend.h"
#include "engine/backend/backend_factory.h"
#include "engine/backend/weight_store.h"
#include "engine/model/model.h"
#include "engine/runtime/model_runner.h"
#include "tests/support/test_files.h"

namespace ninfer::testing {

nlohmann::json reference_index();
std::vector<int32_t> read_i32(const nlohmann::json& file_entry);  // {"file": ..., "shape": ...} or a path stem
std::vector<float> read_f32(const nlohmann::json& file_entry);

// max|a − b| / max|b|, the fixtures' relative error.
double rel_err(std::span<const float> a, std::span<const float> b);

// Packs models/<name> with ninfer-pack's engine code, opens it and builds the engine pieces on the CPU backend (or
// the CUDA backend's device 0, for the GPU end-to-end tests).
struct ReferenceModel {
  // bf16_activations: CpuBackendOptions::bf16_activations (the CPU backend).
  explicit ReferenceModel(const std::string& name, DType kv_dtype = DType::kF32, int threads = 2,
                          BackendKind backend_kind = BackendKind::kCpu, bool bf16_activations = false);
  // An artifact that is already packed (e.g. the shipped models/ninfer-tiny.ninfer).
  struct Packed {
    std::string path;
  };
  explicit ReferenceModel(const Packed& artifact, DType kv_dtype = DType::kF32, int threads = 2,
                          BackendKind backend_kind = BackendKind::kCpu);

  // Greedy next token of the given logits row (lowest id wins a tie, as torch.argmax).
  static int32_t argmax(std::span<const float> row);

  std::string name;
  TempDir dir;
  std::unique_ptr<Artifact> artifact;
  ModelConfig config;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<WeightStore> weights;  // device copies of the weights (none on the CPU backend)
  std::unique_ptr<Model> model;
  std::unique_ptr<KvCache> kv;
  std::unique_ptr<LinearStateCache> state;
  std::unique_ptr<ModelRunner> runner;

 private:
  void load(const std::string& artifact_path, DType kv_dtype, int threads, BackendKind backend_kind,
            bool bf16_activations = false);
};

}  // namespace ninfer::testing
