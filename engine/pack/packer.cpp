#include "engine/pack/packer.h"

#include <chrono>
#include <limits>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "engine/artifact/artifact_writer.h"
#include "engine/core/error.h"
#include "engine/hf/hf_checkpoint.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_schema.h"
#include "engine/pack/checkpoint_layout.h"
#include "engine/pack/tensor_plan.h"
#include "engine/pack/tokenizer_check.h"
#include "engine/pack/vocab_padding.h"
#include "engine/tokenizer/reasoning_budget.h"

namespace ninfer {

namespace {

bool starts_with(const std::string &s, std::string_view p) {
  return s.compare(0, p.size(), p) == 0;
}

// eos_token_id is an id or a list of ids (HF's GenerationConfig); anything else in
// it is refused rather than read (a nested list used to be walked recursively,
// and an integer beyond int32 was truncated into another id).
void collect_ids(const nlohmann::json &j, const char *where,
                 std::vector<int32_t> &out) {
  auto take = [&](const nlohmann::json &v) {
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() ? v.get<uint64_t>() > INT32_MAX
                                : v.get<int64_t>() < 0 ||
                                      v.get<int64_t>() > INT32_MAX))
      fail(ErrorKind::kCorrupt,
           "{}: eos_token_id {} is not a token id (an integer in [0, 2^31))",
           where, v.dump());
    out.push_back(static_cast<int32_t>(v.get<int64_t>()));
  };
  if (j.is_array())
    for (const auto &v : j)
      take(v);
  else if (!j.is_null())
    take(j);
}

std::vector<int32_t> eos_ids(const nlohmann::json &meta) {
  std::vector<int32_t> ids;
  for (const char *where : {"config", "generation"}) {
    const char *file = std::string_view(where) == "config"
                           ? "config.json"
                           : "generation_config.json";
    const nlohmann::json &j = meta[where];
    if (j.is_object() && j.contains("eos_token_id"))
      collect_ids(j["eos_token_id"], file, ids);
    if (j.is_object() && j.contains("text_config") &&
        j["text_config"].is_object() &&
        j["text_config"].contains("eos_token_id"))
      collect_ids(j["text_config"]["eos_token_id"], file, ids);
  }
  return ids;
}

// Sources that must outlive the writer: the plan holds views into their
// mappings.
struct Sources {
  std::optional<HfCheckpoint> hf;
  std::optional<Artifact> artifact;
  std::vector<SafetensorsFile> extra;
};

} // namespace

CanonicalName canonical_tensor_name(const std::string &hf_name) {
  if (starts_with(hf_name, "mtp."))
    return {hf_name, "mtp"};
  if (starts_with(hf_name, "dflash2."))
    return {hf_name, "dflash2"};
  if (starts_with(hf_name, "draft_lm_head."))
    return {hf_name, "draft_lm_head"};
  if (starts_with(hf_name, "model.visual.") || starts_with(hf_name, "visual."))
    return {hf_name, "vision"};
  if (starts_with(hf_name, "model.language_model."))
    return {"model." + hf_name.substr(21), "main"};
  return {hf_name, "main"};
}

PackReport pack_artifact(const PackOptions &options) {
  auto t0 = std::chrono::steady_clock::now();
  if (options.hf_dir.empty() == options.from_artifact.empty())
    fail(ErrorKind::kInvalidArgument,
         "ninfer-pack: give exactly one of --hf DIR or --from ARTIFACT");
  PackReport report;
  Sources src;
  TensorPlan plan;
  nlohmann::json meta;
  std::map<std::string, std::string> blobs;
  std::string source_name;
  std::optional<ModelConfig> config;

  if (!options.hf_dir.empty()) {
    src.hf.emplace(HfCheckpoint::open(options.hf_dir));
    const HfCheckpoint &ck = *src.hf;
    source_name = ck.dir;
    config = ModelConfig::from_hf_json(ck.config, ck.dir + "/config.json");
    check_checkpoint_layout(ck);
    auto fp8 = detect_fp8_blockwise(ck.config, ck.dir);
    std::optional<Nvfp4CheckpointFormat> nvfp4;
    if (!fp8)
      nvfp4 = detect_nvfp4_checkpoint(ck.config, ck.hf_quant_config, ck.dir);
    plan_hf_checkpoint(ck, nvfp4, plan, fp8);
    meta["architecture"] = architecture_name(config->arch);
    meta["config"] = ck.config;
    meta["generation"] = ck.generation_config.is_object()
                             ? ck.generation_config
                             : nlohmann::json::object();
    nlohmann::json tok_cfg = ck.tokenizer_config.is_object()
                                 ? ck.tokenizer_config
                                 : nlohmann::json::object();
    tok_cfg.erase("chat_template"); // stored once, under "chat_template"
    meta["tokenizer_config"] = tok_cfg;
    meta["chat_template"] = ck.chat_template ? nlohmann::json(*ck.chat_template)
                                             : nlohmann::json(nullptr);
    meta["quantization"] = {{"method", "none"}};
    if (nvfp4) {
      report.imported = nvfp4_source_name(nvfp4->source);
      meta["quantization"] = {{"method", "nvfp4"},
                              {"imported_from", report.imported},
                              {"checkpoint_quantization", nvfp4->description}};
    }
    if (fp8) {
      report.imported = "fp8";
      for (const auto &[name, t] : ck.tensors)
        report.fp8_dequantized += t->st_dtype == "F8_E4M3";
      meta["quantization"] = {{"method", "none"},
                              {"imported_from", "fp8"},
                              {"checkpoint_quantization", fp8->description},
                              {"dequantized_to", "bf16"},
                              {"dequantized_tensors", report.fp8_dequantized}};
    }
    if (auto vision = vision_section_metadata(ck.config, plan, ck.dir))
      meta["vision"] = *vision;
    if (ck.tokenizer_json)
      blobs["tokenizer.json"] = *ck.tokenizer_json;
    else
      spdlog::warn("{}: no tokenizer.json; the artifact can only be driven "
                   "with token ids",
                   ck.dir);
  } else {
    src.artifact.emplace(
        Artifact::open(options.from_artifact,
                       {.verify_checksums = false, .show_progress = false}));
    const Artifact &a = *src.artifact;
    source_name = a.path();
    config =
        ModelConfig::from_hf_json(a.config(), a.path() + " (metadata config)");
    plan_artifact(a, plan);
    meta = a.metadata();
    meta.erase("tensors");
    meta.erase("blobs");
    meta.erase("format");
    meta.erase("format_version");
    if (!meta.contains("quantization"))
      meta["quantization"] = {{"method", "none"}};
    for (const BlobInfo &b : a.blobs())
      blobs[b.name] = std::string(*a.blob(b.name));
    meta["repacked_from"] = a.path();
  }
  meta["producer"] = {{"name", "ninfer-pack"}, {"version", NINFER_VERSION}};

  // The default reasoning budget (generation config reasoning_budget): a bad
  // value in the source is refused here, not at serve time; --reasoning-budget
  // replaces it (-1 removes it).
  if (meta.contains("generation"))
    generation_reasoning_budget(
        meta["generation"],
        source_name + (options.hf_dir.empty() ? " (metadata generation)"
                                              : "/generation_config.json"));
  if (options.reasoning_budget) {
    if (*options.reasoning_budget < -1 ||
        *options.reasoning_budget > std::numeric_limits<int32_t>::max())
      fail(ErrorKind::kInvalidArgument,
           "--reasoning-budget {}: give a token count from 0 to {}, or -1 to "
           "remove it",
           *options.reasoning_budget, std::numeric_limits<int32_t>::max());
    if (!meta.contains("generation") || !meta["generation"].is_object())
      meta["generation"] = nlohmann::json::object();
    if (*options.reasoning_budget < 0)
      meta["generation"].erase("reasoning_budget");
    else
      meta["generation"]["reasoning_budget"] = *options.reasoning_budget;
  }

  src.extra.reserve(options.add_safetensors.size());
  for (const std::string &f : options.add_safetensors) {
    src.extra.push_back(SafetensorsFile::open(f));
    plan_safetensors(src.extra.back(), plan);
  }

  // A tokenizer ninfer-serve could not load is refused now, not at serve time.
  if (auto tok = blobs.find("tokenizer.json"); tok != blobs.end())
    check_packable_tokenizer(tok->second, source_name);

  // Padded vocabulary (vocab_size > the tokenizer's ids): the tokenless rows
  // go, before the draft head takes rows.
  if (auto tok = blobs.find("tokenizer.json"); tok != blobs.end())
    drop_padded_vocab(tokenizer_id_count(tok->second, source_name), *config,
                      plan, meta, source_name);

  if (config->tie_word_embeddings && plan.find("lm_head.weight"))
    spdlog::warn("{}: tie_word_embeddings is true but lm_head.weight is "
                 "stored; it is kept and used",
                 source_name);

  if (options.draft.vocab > 0) {
    if (options.draft.corpus.empty())
      fail(ErrorKind::kInvalidArgument,
           "--draft-vocab {} needs --draft-corpus PATH", options.draft.vocab);
    auto tok_it = blobs.find("tokenizer.json");
    if (tok_it == blobs.end())
      fail(ErrorKind::kNotFound,
           "{}: --draft-vocab needs the tokenizer, and there is no "
           "tokenizer.json",
           source_name);
    const std::string head_name =
        config->tie_word_embeddings && !plan.find("lm_head.weight")
            ? "model.embed_tokens.weight"
            : "lm_head.weight";
    const PlannedTensor *head = plan.find(head_name);
    if (!head)
      fail(ErrorKind::kNotFound, "{}: --draft-vocab: no '{}' to take rows from",
           source_name, head_name);
    Tokenizer tok = Tokenizer::from_json(tok_it->second);
    const std::string chat_template =
        meta["chat_template"].is_string()
            ? meta["chat_template"].get<std::string>()
            : "";
    DraftVocab dv =
        select_draft_vocab(tok, read_draft_corpus(options.draft.corpus),
                           chat_template, eos_ids(meta), options.draft.vocab);
    plan_draft_lm_head(dv, *head, plan);
    report.draft_vocab = dv.ids.size();
    report.draft_coverage =
        dv.corpus_tokens ? double(dv.covered_tokens) / double(dv.corpus_tokens)
                         : 0.0;
    meta["draft_lm_head"] = {{"vocab", dv.ids.size()},
                             {"source", head_name},
                             {"forced_ids", dv.forced},
                             {"corpus_tokens", dv.corpus_tokens},
                             {"coverage", report.draft_coverage}};
    spdlog::info("draft lm_head: {} of {} ids from {} corpus tokens ({} "
                 "control tokens forced), coverage {:.4f}",
                 dv.ids.size(), tok.vocab_size(), dv.corpus_tokens,
                 dv.forced.size(), report.draft_coverage);
  }

  if (options.quant.nvfp4) {
    report.quant = plan_nvfp4_quantization(*config, options.quant, plan);
    nlohmann::json own = {
        {"recipe", "ModelOpt NVFP4QTensor.quantize, bit-exact (docs/nvfp4.md)"},
        {"block_size", 16},
        {"scale_groups", options.quant.scale_groups == Nvfp4ScaleGroups::kFused
                             ? "fused"
                             : "tensor"},
        {"keep", options.quant.keep},
        {"input_scale", "none (0): no calibration"},
        {"quantized_tensors", report.quant.quantized},
        {"lm_head", report.quant.lm_head ? "nvfp4" : "kept"}};
    meta["quantization"]["method"] = "nvfp4";
    meta["quantization"]["ninfer_pack"] = own;
  }

  // Shapes and dtypes against config.json, before anything is written.
  check_weights(
      *config,
      [&](const std::string &name) -> std::optional<FoundWeight> {
        const PlannedTensor *t = plan.find(name);
        if (!t)
          return std::nullopt;
        return FoundWeight{t->dtype, t->shape};
      },
      source_name);

  ArtifactWriter writer(meta);
  for (const auto &[name, bytes] : blobs)
    writer.add_blob(name, bytes);
  for (const auto &[name, t] : plan.tensors()) {
    auto produce = t.produce;
    if (!produce) {
      const std::span<const std::byte> data = t.bytes;
      produce = [data](const ByteSink &sink) {
        constexpr size_t kPiece =
            64u
            << 20; // 64 MiB pieces so the progress bar moves on large tensors
        for (size_t off = 0; off < data.size(); off += kPiece)
          sink(data.subspan(off, std::min(kPiece, data.size() - off)));
      };
    }
    writer.add_tensor({name, t.section, t.dtype, t.shape, produce});
    report.tensor_bytes += *tensor_storage_bytes(t.dtype, t.shape);
    report.tensors_per_section[t.section]++;
  }
  report.tensors = plan.tensors().size();
  report.file_bytes = writer.write(options.output, options.show_progress);
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return report;
}

} // namespace ninfer
