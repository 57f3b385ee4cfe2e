#include "engine/hf/hf_checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/artifact/mapped_file.h"
#include "engine/core/error.h"

namespace ninfer {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> read_text_if_exists(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return std::nullopt;
  std::ifstream in(p, std::ios::binary);
  if (!in) fail(ErrorKind::kIo, "{}: cannot open", path_to_utf8(p));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json parse_json_file(const fs::path& p, const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail(ErrorKind::kCorrupt, "{}: invalid JSON (at byte offset {}): {}", path_to_utf8(p), e.byte, e.what());
  } catch (const nlohmann::json::exception& e) {  // out_of_range: a number beyond a double (1e400)
    fail(ErrorKind::kCorrupt, "{}: invalid JSON: {}", path_to_utf8(p), e.what());
  }
}

nlohmann::json read_json_if_exists(const fs::path& p) {
  auto text = read_text_if_exists(p);
  if (!text) return nullptr;
  return parse_json_file(p, *text);
}

}  // namespace

uint64_t HfCheckpoint::tensor_bytes() const {
  uint64_t n = 0;
  for (const auto& [name, t] : tensors) n += t->data.size();
  return n;
}

HfCheckpoint HfCheckpoint::open(const std::string& utf8_dir) {
  HfCheckpoint ck;
  ck.dir = utf8_dir;
  fs::path dir = path_from_utf8(utf8_dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail(ErrorKind::kNotFound, "{}: not a directory", utf8_dir);

  fs::path config_path = dir / "config.json";
  auto config_text = read_text_if_exists(config_path);
  if (!config_text) fail(ErrorKind::kNotFound, "{}: missing config.json", utf8_dir);
  ck.config = parse_json_file(config_path, *config_text);
  if (!ck.config.is_object()) fail(ErrorKind::kCorrupt, "{}: not a JSON object", path_to_utf8(config_path));
  ck.generation_config = read_json_if_exists(dir / "generation_config.json");
  ck.tokenizer_config = read_json_if_exists(dir / "tokenizer_config.json");
  ck.hf_quant_config = read_json_if_exists(dir / "hf_quant_config.json");
  ck.tokenizer_json = read_text_if_exists(dir / "tokenizer.json");
  if (ck.tokenizer_json) parse_json_file(dir / "tokenizer.json", *ck.tokenizer_json);  // validate now, fail early
  ck.chat_template = read_text_if_exists(dir / "chat_template.jinja");
  if (!ck.chat_template && ck.tokenizer_config.is_object() && ck.tokenizer_config.contains("chat_template") &&
      ck.tokenizer_config["chat_template"].is_string())
    ck.chat_template = ck.tokenizer_config["chat_template"].get<std::string>();

  std::vector<std::string> shard_names;
  fs::path index_path = dir / "model.safetensors.index.json";
  if (auto index_text = read_text_if_exists(index_path)) {
    auto index = parse_json_file(index_path, *index_text);
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      fail(ErrorKind::kCorrupt, "{}: no \"weight_map\" object", path_to_utf8(index_path));
    std::set<std::string> unique;
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
      if (!it.value().is_string())
        fail(ErrorKind::kCorrupt, "{}: weight_map entry '{}' is not a file name", path_to_utf8(index_path), it.key());
      unique.insert(it.value().get<std::string>());
    }
    for (const auto& s : unique) {
      // A shard is a file of the checkpoint's own folder: a name with a folder part ("../x", "/abs/x", "sub/x") would
      // make the packer read a file the checkpoint does not hold.
      const fs::path name = path_from_utf8(s);
      if (s.empty() || name.has_parent_path() || name.has_root_path() || name == "." || name == "..")
        fail(ErrorKind::kCorrupt, "{}: shard '{}' named in model.safetensors.index.json is not a file name in the "
             "checkpoint's folder", utf8_dir, s);
      if (!fs::is_regular_file(dir / name, ec))
        fail(ErrorKind::kNotFound, "{}: shard '{}' named in model.safetensors.index.json is missing", utf8_dir, s);
      shard_names.push_back(s);
    }
    ck.shards.reserve(shard_names.size());
    for (const auto& s : shard_names) ck.shards.push_back(SafetensorsFile::open(path_to_utf8(dir / path_from_utf8(s))));
    // Every tensor the index names must be in the shard it names.
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
      size_t si = std::distance(shard_names.begin(),
                                std::find(shard_names.begin(), shard_names.end(), it.value().get<std::string>()));
      if (!ck.shards[si].tensors().count(it.key()))
        fail(ErrorKind::kCorrupt, "{}: the index places tensor '{}' in '{}', which does not hold it", utf8_dir,
             it.key(), shard_names[si]);
    }
  } else {
    fs::path single = dir / "model.safetensors";
    if (!fs::is_regular_file(single, ec))
      fail(ErrorKind::kNotFound, "{}: neither model.safetensors nor model.safetensors.index.json found", utf8_dir);
    ck.shards.push_back(SafetensorsFile::open(path_to_utf8(single)));
  }

  for (const auto& shard : ck.shards) {
    for (const auto& [name, t] : shard.tensors()) {
      auto [it, inserted] = ck.tensors.emplace(name, &t);
      if (!inserted)
        fail(ErrorKind::kCorrupt, "{}: tensor '{}' appears in two shards ({} and another)", utf8_dir, name, shard.path());
    }
  }
  return ck;
}

}  // namespace ninfer
