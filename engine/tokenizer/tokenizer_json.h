// Owns the small field readers shared by the tokenizer.json loaders (tokenizer.cpp, pretokenizer_chain.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "engine/core/error.h"

namespace ninfer::tokenizer_json {

// j[key] when it is a string, else "".
inline std::string field_type(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

// j[key] as a boolean; `dflt` when absent or null; kCorrupt when it is something else.
inline bool flag(const nlohmann::json& j, const char* key, bool dflt) {
  if (!j.contains(key) || j[key].is_null()) return dflt;
  if (!j[key].is_boolean()) fail(ErrorKind::kCorrupt, "tokenizer.json: field '{}' is not a boolean", key);
  return j[key].get<bool>();
}

}  // namespace ninfer::tokenizer_json
