// Owns the tokenizer the tokenizer fuzz targets share: ninfer-tiny's tokenizer.json, loaded once per process.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/artifact/artifact.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_common.h"

namespace ninfer::fuzz {

struct LoadedTokenizer {
  Tokenizer tokenizer;
  bool nfc = false;  // its normalizer is NFC: decode(encode(t)) is nfc(t)
};

inline const LoadedTokenizer& fuzz_tokenizer() {
  static const LoadedTokenizer t = [] {
    OpenOptions o;
    o.show_progress = false;
    const Artifact a = Artifact::open(default_model_path(), o);
    const std::string json_text(*a.blob("tokenizer.json"));
    const nlohmann::json j = nlohmann::json::parse(json_text);
    const auto& n = j["normalizer"];
    bool nfc = n.is_object() && n.value("type", "") == "NFC";
    if (n.is_object() && n.value("type", "") == "Sequence")
      for (const auto& s : n["normalizers"]) nfc = nfc || s.value("type", "") == "NFC";
    return LoadedTokenizer{Tokenizer::from_json(json_text), nfc};
  }();
  return t;
}

}  // namespace ninfer::fuzz
