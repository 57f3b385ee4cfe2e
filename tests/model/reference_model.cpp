#include "tests/model/reference_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "engine/model/model_artifact.h"
#include "engine/pack/packer.h"

namespace ninfer::testing {

namespace {
const std::string kRoot = std::string(NINFER_TEST_DATA) + "/reference/";

template <typename T>
std::vector<T> read_raw(const nlohmann::json& entry, const char* ext) {
  std::string rel = entry.is_string() ? entry.get<std::string>() + ext : entry["file"].get<std::string>();
  std::ifstream in(kRoot + rel, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot open fixture " + kRoot + rel);
  auto bytes = static_cast<size_t>(in.tellg());
  std::vector<T> v(bytes / sizeof(T));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(bytes));
  return v;
}
}  // namespace

nlohmann::json reference_index() {
  std::ifstream in(kRoot + "index.json");
  return nlohmann::json::parse(in);
}

std::vector<int32_t> read_i32(const nlohmann::json& e) { return read_raw<int32_t>(e, ".i32"); }
std::vector<float> read_f32(const nlohmann::json& e) { return read_raw<float>(e, ".f32"); }

double rel_err(std::span<const float> a, std::span<const float> b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    num = std::max(num, static_cast<double>(std::fabs(a[i] - b[i])));
    den = std::max(den, static_cast<double>(std::fabs(b[i])));
  }
  return a.size() == b.size() ? num / den : INFINITY;
}

int32_t ReferenceModel::argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

ReferenceModel::ReferenceModel(const std::string& model_name, DType kv_dtype, int threads, BackendKind backend_kind,
                               bool bf16_activations)
    : name(model_name) {
  std::string out = dir.file(name + ".ninfer");
  pack_hf_checkpoint({.hf_dir = kRoot + "models/" + name, .output = out, .show_progress = false});
  load(out, kv_dtype, threads, backend_kind, bf16_activations);
}

ReferenceModel::ReferenceModel(const Packed& artifact_file, DType kv_dtype, int threads, BackendKind backend_kind)
    : name(artifact_file.path) {
  load(artifact_file.path, kv_dtype, threads, backend_kind);
}

void ReferenceModel::load(const std::string& path, DType kv_dtype, int threads, BackendKind backend_kind,
                          bool bf16_activations) {
  artifact = std::make_unique<Artifact>(Artifact::open(path));
  config = load_model_config(*artifact);
  backend = make_backend({.kind = backend_kind, .threads = threads, .bf16_activations = bf16_activations});
  weights = std::make_unique<WeightStore>(*backend);
  model = std::make_unique<Model>(config, placed(ModelWeights::bind(*artifact, config), *weights, name), *backend);
  kv = std::make_unique<KvCache>(*backend, config, KvCacheConfig{.block_size = 16, .num_blocks = 256, .dtype = kv_dtype});
  state = std::make_unique<LinearStateCache>(*backend, config, 8);
  runner = std::make_unique<ModelRunner>(*model, *kv, *state);
}

}  // namespace ninfer::testing
