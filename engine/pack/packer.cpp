#include "engine/pack/packer.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "engine/artifact/artifact_writer.h"
#include "engine/core/error.h"
#include "engine/hf/hf_checkpoint.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_schema.h"

namespace ninfer {

namespace {

bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

}  // namespace

CanonicalName canonical_tensor_name(const std::string& hf_name) {
  if (starts_with(hf_name, "mtp.")) return {hf_name, "mtp"};
  if (starts_with(hf_name, "dflash2.")) return {hf_name, "dflash2"};
  if (starts_with(hf_name, "draft_lm_head.")) return {hf_name, "draft_lm_head"};
  if (starts_with(hf_name, "model.visual.") || starts_with(hf_name, "visual.")) return {hf_name, "vision"};
  if (starts_with(hf_name, "model.language_model.")) return {"model." + hf_name.substr(21), "main"};
  return {hf_name, "main"};
}

PackReport pack_hf_checkpoint(const PackOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  HfCheckpoint ck = HfCheckpoint::open(options.hf_dir);
  const std::string config_source = options.hf_dir + "/config.json";
  ModelConfig config = ModelConfig::from_hf_json(ck.config, config_source);

  struct Item {
    CanonicalName cn;
    const SafetensorsTensor* t;
  };
  std::map<std::string, Item> items;  // canonical name → source
  for (const auto& [hf_name, t] : ck.tensors) {
    CanonicalName cn = canonical_tensor_name(hf_name);
    if (!t->dtype)
      fail(ErrorKind::kUnsupported, "{}: tensor '{}' has dtype {}, which ninfer-pack cannot store as-is (supported: F32, F16, BF16, I8, I32, F8_E4M3)",
           ck.dir, hf_name, t->st_dtype);
    auto [it, inserted] = items.emplace(cn.name, Item{cn, t});
    if (!inserted)
      fail(ErrorKind::kCorrupt, "{}: tensors '{}' and another both map to artifact name '{}'", ck.dir, hf_name, cn.name);
  }

  // Shapes and dtypes against config.json, before anything is written.
  check_weights(
      config,
      [&](const std::string& name) -> std::optional<FoundWeight> {
        auto it = items.find(name);
        if (it == items.end()) return std::nullopt;
        return FoundWeight{*it->second.t->dtype, it->second.t->shape};
      },
      ck.dir);
  if (config.tie_word_embeddings && items.count("lm_head.weight"))
    spdlog::warn("{}: tie_word_embeddings is true but lm_head.weight is stored; it is kept and used", ck.dir);

  nlohmann::json meta;
  meta["architecture"] = architecture_name(config.arch);
  meta["config"] = ck.config;
  meta["generation"] = ck.generation_config.is_object() ? ck.generation_config : nlohmann::json::object();
  nlohmann::json tok_cfg = ck.tokenizer_config.is_object() ? ck.tokenizer_config : nlohmann::json::object();
  tok_cfg.erase("chat_template");  // stored once, under "chat_template"
  meta["tokenizer_config"] = tok_cfg;
  meta["chat_template"] = ck.chat_template ? nlohmann::json(*ck.chat_template) : nlohmann::json(nullptr);
  meta["quantization"] = {{"method", "none"}};
  meta["producer"] = {{"name", "ninfer-pack"}, {"version", NINFER_VERSION}};

  ArtifactWriter writer(meta);
  if (ck.tokenizer_json) writer.add_blob("tokenizer.json", *ck.tokenizer_json);
  else spdlog::warn("{}: no tokenizer.json; the artifact can only be driven with token ids", ck.dir);

  PackReport report;
  for (const auto& [name, item] : items) {
    const SafetensorsTensor* t = item.t;
    writer.add_tensor({name, item.cn.section, *t->dtype, t->shape,
                       [t](const ByteSink& sink) {
                         // Stream in 64 MiB pieces so the progress bar moves on large tensors.
                         constexpr size_t kPiece = 64u << 20;
                         for (size_t off = 0; off < t->data.size(); off += kPiece)
                           sink(t->data.subspan(off, std::min(kPiece, t->data.size() - off)));
                       }});
    report.tensor_bytes += t->data.size();
    report.tensors_per_section[item.cn.section]++;
  }
  report.tensors = items.size();
  report.file_bytes = writer.write(options.output, options.show_progress);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace ninfer
