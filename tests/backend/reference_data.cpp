#include "tests/backend/reference_data.h"

#include <fstream>
#include <stdexcept>

namespace ninfer::testing {

int64_t RefTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string reference_dir() { return std::string(NINFER_TEST_DATA) + "/reference"; }

const nlohmann::json& reference_index() {
  static const nlohmann::json index = [] {
    const std::string path = reference_dir() + "/index.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    return nlohmann::json::parse(in);
  }();
  return index;
}

RefTensor read_reference(const nlohmann::json& entry) {
  RefTensor t;
  t.shape = entry.at("shape").get<std::vector<int64_t>>();
  const std::string path = reference_dir() + "/" + entry.at("file").get<std::string>();
  const std::string dtype = entry.at("dtype").get<std::string>();
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot open " + path);
  const auto bytes = static_cast<int64_t>(in.tellg());
  if (bytes != t.numel() * 4)
    throw std::runtime_error(path + ": " + std::to_string(bytes) + " bytes, expected " + std::to_string(t.numel() * 4));
  in.seekg(0);
  char* dst;
  if (dtype == "f32") {
    t.f32.resize(static_cast<size_t>(t.numel()));
    dst = reinterpret_cast<char*>(t.f32.data());
  } else if (dtype == "i32") {
    t.i32.resize(static_cast<size_t>(t.numel()));
    dst = reinterpret_cast<char*>(t.i32.data());
  } else {
    throw std::runtime_error(path + ": unknown dtype " + dtype);
  }
  in.read(dst, bytes);  // the files are little-endian, as is every platform ninfer builds for
  if (!in) throw std::runtime_error("short read of " + path);
  return t;
}

const nlohmann::json& reference_ops(const std::string& model, int layer) {
  for (const auto& op : reference_index().at("ops"))
    if (op.at("model") == model && op.at("layer") == layer) return op;
  throw std::runtime_error("no op dump for " + model + " layer " + std::to_string(layer));
}

}  // namespace ninfer::testing
