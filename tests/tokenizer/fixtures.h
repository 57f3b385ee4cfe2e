// Owns the shared loading of the tokenizer test fixtures (unpacked from tests/data/tokenizer at build time).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace ninfer::test {

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open fixture " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string fixture_path(const std::string& name) { return std::string(NINFER_TOKENIZER_FIXTURES) + "/" + name; }
inline std::string data_path(const std::string& name) { return std::string(NINFER_TEST_DATA) + "/tokenizer/" + name; }

inline const std::string& tokenizer_json() {
  static const std::string text = read_file(fixture_path("tokenizer.json"));
  return text;
}

// The Qwen3.5 tokenizer, loaded once per test binary.
inline const Tokenizer& qwen35() {
  static const Tokenizer tok = Tokenizer::from_json(tokenizer_json());
  return tok;
}

inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open fixture " + path);
  std::string line;
  while (std::getline(f, line))
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace ninfer::test
