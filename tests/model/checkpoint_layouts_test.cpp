// The official Qwen3.5 checkpoint layouts through ninfer-pack (tests/data/reference/multimodal, tools/reference/
// make_multimodal_fixtures.py): a Qwen3_5ForConditionalGeneration checkpoint (model.language_model.*, model.visual.*,
// mtp.*) and its block-wise FP8 twin, packed by the real packer and run by the engine against transformers' logits;
// the vision section; the FP8 dequantization against transformers' own; corrupt FP8 parts.
#include <filesystem>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/core/half.h"
#include "engine/hf/fp8_blockwise.h"
#include "engine/hf/safetensors.h"
#include "engine/pack/packer.h"
#include "tests/model/reference_model.h"

namespace ninfer {
namespace {

namespace fs = std::filesystem;
using testing::ReferenceModel;

const std::string kRoot = std::string(NINFER_TEST_DATA) + "/reference/multimodal/";

nlohmann::json index() { return nlohmann::json::parse(testing::read_file(kRoot + "index.json")); }

// A file entry of this index as reference_model.h's readers take it (relative to tests/data/reference/).
nlohmann::json fixture(const nlohmann::json& entry) {
  return {{"file", "multimodal/" + entry["file"].get<std::string>()}};
}

std::string pack(const std::string& checkpoint, const testing::TempDir& dir, const QuantOptions& quant = {}) {
  const std::string out = dir.file(fs::path(checkpoint).filename().string() + (quant.nvfp4 ? "-nvfp4" : "") + ".ninfer");
  pack_artifact({.hf_dir = kRoot + checkpoint, .output = out, .quant = quant, .show_progress = false});
  return out;
}

class MultimodalGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(MultimodalGolden, TextLogitsMatchTransformers) {
  const nlohmann::json m = index()["models"][GetParam()];
  testing::TempDir dir;
  ReferenceModel model(ReferenceModel::Packed{pack(m["checkpoint"], dir)});
  EXPECT_EQ(model.config.mtp_num_layers, 1);
  SeqId id = 0;
  for (const auto& p : m["prompts"]) {
    const auto tokens = testing::read_i32(fixture(p["tokens"]));
    const auto want = testing::read_f32(fixture(p["logits"]));
    const int32_t slot = model.state->acquire();
    SequenceStep s{id, slot, 0, tokens, true};
    const auto got = model.runner->step(std::span(&s, 1));
    EXPECT_LE(testing::rel_err(got, want), 1e-4) << GetParam() << ", " << tokens.size() << " tokens";
    model.kv->release(id++);
    model.state->release(slot);
  }
}

INSTANTIATE_TEST_SUITE_P(Reference, MultimodalGolden, ::testing::Values("qwen35_mm", "qwen35_mm_fp8"));

TEST(MultimodalPack, SectionsAndTheVisionTower) {
  const nlohmann::json m = index()["models"]["qwen35_mm"];
  testing::TempDir dir;
  const Artifact a = Artifact::open(pack(m["checkpoint"], dir));
  const SafetensorsFile st = SafetensorsFile::open(kRoot + "models/qwen35_mm/model.safetensors");
  std::map<std::string, size_t> per_section;
  for (const TensorInfo& t : a.tensors()) per_section[t.section]++;
  EXPECT_EQ(per_section["main"], m["tensors"]["model.language_model."].get<size_t>() + 1);  // + lm_head
  EXPECT_EQ(per_section["mtp"], m["tensors"]["mtp."].get<size_t>());
  EXPECT_EQ(per_section["vision"], m["tensors"]["model.visual."].get<size_t>());
  for (const TensorInfo& t : a.tensors()) {
    EXPECT_EQ(t.name.find("language_model"), std::string::npos) << t.name;
    // Every tensor is the checkpoint's, byte for byte, under its canonical name.
    const std::string hf = t.name.starts_with("model.") && t.section == "main" ? "model.language_model." + t.name.substr(6)
                                                                               : t.name;
    const SafetensorsTensor& src = st.tensors().at(hf);
    EXPECT_EQ(t.section == "vision", hf.starts_with("model.visual.")) << hf;
    EXPECT_EQ(t.dtype, DType::kBF16) << hf;
    EXPECT_EQ(t.shape, src.shape) << hf;
    ASSERT_TRUE(std::ranges::equal(a.data(t), src.data)) << hf;
  }
  const nlohmann::json config = nlohmann::json::parse(testing::read_file(kRoot + "models/qwen35_mm/config.json"));
  const nlohmann::json& vision = a.metadata()["vision"];
  EXPECT_EQ(vision["config"], config["vision_config"]);
  EXPECT_EQ(vision["tensors"], m["tensors"]["model.visual."]);
  EXPECT_EQ(vision["executed"], false);
  EXPECT_EQ(a.metadata()["quantization"]["method"], "none");
}

TEST(Fp8Blockwise, ImportIsTransformersDequantizationRoundedToBf16) {
  testing::TempDir dir;
  const Artifact a = Artifact::open(pack("models/qwen35_mm_fp8", dir));
  const nlohmann::json& q = a.metadata()["quantization"];
  EXPECT_EQ(q["imported_from"], "fp8");
  EXPECT_EQ(q["dequantized_tensors"], index()["models"]["qwen35_mm_fp8"]["quantized_weights"]);
  EXPECT_EQ(q["checkpoint_quantization"]["weight_block_size"], nlohmann::json::array({16, 16}));
  for (const TensorInfo& t : a.tensors()) {
    EXPECT_EQ(t.dtype, DType::kBF16) << t.name;
    EXPECT_EQ(t.name.find("scale_inv"), std::string::npos) << t.name;
  }
  // The same artifact tensor from the bf16 twin differs (FP8 is lossy), the FP8 one is the dequantization.
  const SafetensorsFile st = SafetensorsFile::open(kRoot + "models/qwen35_mm_fp8/model.safetensors");
  const std::string name = "model.layers.1.self_attn.q_proj.weight";
  const SafetensorsTensor& w = st.tensors().at("model.language_model.layers.1.self_attn.q_proj.weight");
  const SafetensorsTensor& s = st.tensors().at("model.language_model.layers.1.self_attn.q_proj.weight_scale_inv");
  const auto format =
      detect_fp8_blockwise(nlohmann::json::parse(testing::read_file(kRoot + "models/qwen35_mm_fp8/config.json")), kRoot);
  ASSERT_TRUE(format);
  std::vector<float> f32(w.data.size());
  dequantize_fp8_blockwise(w.data, s.data, w.shape[0], w.shape[1], *format, f32);
  std::vector<uint16_t> bf16(f32.size());
  f32_to_bf16(f32.data(), bf16.data(), f32.size());
  EXPECT_TRUE(std::ranges::equal(a.data(a.require(name)), std::as_bytes(std::span(bf16))));
}

TEST(Fp8Blockwise, ShardedCheckpointWithScalesApartFromTheirWeightsPacksTheSame) {
  // Releases ship sharded: a weight and its weight_scale_inv may sit in different shards. The FP8 fixture re-sharded
  // into three files, every scale one shard after its weight, packs to the same artifact as the single file.
  testing::TempDir dir;
  const fs::path hf = dir.path() / "hf";
  fs::copy(fs::path(kRoot) / "models/qwen35_mm_fp8", hf);
  std::map<std::string, SafetensorsEntry> shards[3];
  nlohmann::json weight_map;
  const auto shard_name = [](int i) { return "model-0000" + std::to_string(i + 1) + "-of-00003.safetensors"; };
  {
    const SafetensorsFile st = SafetensorsFile::open((hf / "model.safetensors").string());
    int next = 0, apart = 0;
    for (const auto& [name, t] : st.tensors()) {
      if (name.ends_with("_scale_inv")) continue;
      const int i = next++ % 3;
      const auto put = [&](const std::string& n, const SafetensorsTensor& x, int shard) {
        shards[shard][n] = {x.st_dtype, x.shape, std::string(reinterpret_cast<const char*>(x.data.data()), x.data.size())};
        weight_map[n] = shard_name(shard);
      };
      put(name, t, i);
      if (const auto s = st.tensors().find(name + "_scale_inv"); s != st.tensors().end()) {
        put(s->first, s->second, (i + 1) % 3);
        ++apart;
      }
    }
    ASSERT_EQ(apart, index()["models"]["qwen35_mm_fp8"]["quantized_weights"].get<int>());
  }
  fs::remove(hf / "model.safetensors");
  for (int i = 0; i < 3; ++i) testing::write_file((hf / shard_name(i)).string(), make_safetensors(shards[i]));
  testing::write_file((hf / "model.safetensors.index.json").string(), nlohmann::json{{"weight_map", weight_map}}.dump());
  const std::string sharded = dir.file("sharded.ninfer");
  pack_artifact({.hf_dir = hf.string(), .output = sharded, .show_progress = false});
  const Artifact a = Artifact::open(sharded);
  const Artifact b = Artifact::open(pack("models/qwen35_mm_fp8", dir));
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (const TensorInfo& t : b.tensors())
    EXPECT_TRUE(std::ranges::equal(a.data(a.require(t.name)), b.data(t))) << t.name;
  EXPECT_EQ(a.metadata()["quantization"]["dequantized_tensors"], b.metadata()["quantization"]["dequantized_tensors"]);
}

TEST(Fp8Blockwise, PartialEdgeBlocksMatchTransformers) {
  // [40, 50] in 16x16 blocks: a [3, 4] scale grid whose last row and column of blocks are partial.
  const nlohmann::json e = index()["fp8_edges"];
  const SafetensorsFile st = SafetensorsFile::open(kRoot + e["safetensors"].get<std::string>());
  const SafetensorsTensor& w = st.tensors().at("w.weight");
  const SafetensorsTensor& s = st.tensors().at("w.weight_scale_inv");
  const Fp8BlockwiseFormat format{.block_rows = e["block"][0].get<int64_t>(), .block_cols = e["block"][1].get<int64_t>()};
  check_fp8_blockwise(w, s, format, st.path());
  std::vector<float> got(w.data.size());
  dequantize_fp8_blockwise(w.data, s.data, w.shape[0], w.shape[1], format, got);
  const auto want = testing::read_f32(fixture(e["dequantized"]));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;  // one f32 product each
}

TEST(Fp8Blockwise, QuantNvfp4QuantizesTheDequantizedWeights) {
  // --quant nvfp4 on the FP8 checkpoint = --quant nvfp4 on the bf16 artifact its import gives.
  testing::TempDir dir;
  const std::string bf16 = pack("models/qwen35_mm_fp8", dir);
  const Artifact direct = Artifact::open(pack("models/qwen35_mm_fp8", dir, {.nvfp4 = true}));
  const std::string repacked = dir.file("repacked.ninfer");
  pack_artifact({.from_artifact = bf16, .output = repacked, .quant = {.nvfp4 = true}, .show_progress = false});
  const Artifact via_bf16 = Artifact::open(repacked);
  size_t nvfp4 = 0;
  ASSERT_EQ(direct.tensors().size(), via_bf16.tensors().size());
  for (const TensorInfo& t : direct.tensors()) {
    nvfp4 += t.dtype == DType::kNVFP4;
    EXPECT_TRUE(std::ranges::equal(direct.data(t), via_bf16.data(via_bf16.require(t.name)))) << t.name;
  }
  EXPECT_GT(nvfp4, 20u);
}

// Rewrites the FP8 fixture with `edit` applied to its tensors and returns the packer's error.
Error fp8_pack_error(const std::function<void(std::map<std::string, SafetensorsEntry>&)>& edit,
                     const testing::TempDir& dir) {
  const fs::path hf = dir.path() / "hf";
  fs::copy(fs::path(kRoot) / "models/qwen35_mm_fp8", hf);
  const std::string file = (hf / "model.safetensors").string();
  std::map<std::string, SafetensorsEntry> tensors;
  {
    const SafetensorsFile st = SafetensorsFile::open(file);
    for (const auto& [name, t] : st.tensors())
      tensors[name] = {t.st_dtype, t.shape, std::string(reinterpret_cast<const char*>(t.data.data()), t.data.size())};
  }
  edit(tensors);
  testing::write_file(file, make_safetensors(tensors));
  const std::string out = dir.file("out.ninfer");
  try {
    pack_artifact({.hf_dir = hf.string(), .output = out, .show_progress = false});
  } catch (const Error& e) {
    EXPECT_FALSE(fs::exists(out));
    return e;
  }
  return Error(ErrorKind::kInternal, "packed");
}

// The same for the corrupt inputs (ErrorKind::kCorrupt), as the message.
std::string corrupt_fp8_error(const std::function<void(std::map<std::string, SafetensorsEntry>&)>& edit,
                              const testing::TempDir& dir) {
  const Error e = fp8_pack_error(edit, dir);
  EXPECT_EQ(e.kind(), ErrorKind::kCorrupt) << e.what();
  return e.what();
}

const std::string kQ = "model.language_model.layers.1.self_attn.q_proj.weight";

TEST(Fp8Blockwise, MissingScaleIsRefusedNamingFileTensorAndShape) {
  testing::TempDir dir;
  const std::string e = corrupt_fp8_error([](auto& t) { t.erase(kQ + "_scale_inv"); }, dir);
  EXPECT_NE(e.find(dir.file("hf/model.safetensors")), std::string::npos) << e;
  EXPECT_NE(e.find("FP8 weight '" + kQ + "' F8_E4M3 [192, 80] has no scale tensor '" + kQ + "_scale_inv'"),
            std::string::npos) << e;
}

TEST(Fp8Blockwise, ScaleGridThatIsNotTheBlocksIsRefusedNamingTheShapes) {
  testing::TempDir dir;
  const std::string e = corrupt_fp8_error([](auto& t) {
    SafetensorsEntry& s = t[kQ + "_scale_inv"];  // [12, 5] -> [5, 12]: the transposed grid
    s.shape = {5, 12};
  }, dir);
  EXPECT_NE(e.find(dir.file("hf/model.safetensors")), std::string::npos) << e;
  EXPECT_NE(e.find("'" + kQ + "_scale_inv' must be F32 [12, 5] (one scale per 16x16 block of '" + kQ +
                   "' [192, 80]), found F32 [5, 12]"), std::string::npos) << e;
}

TEST(Fp8Blockwise, ScaleWithoutWeightAndNaNAreRefused) {
  {
    testing::TempDir dir;
    const std::string e = corrupt_fp8_error([](auto& t) { t.erase(kQ); }, dir);
    EXPECT_NE(e.find("scale tensor '" + kQ + "_scale_inv' F32 [12, 5] has no weight '" + kQ + "'"), std::string::npos)
        << e;
  }
  testing::TempDir dir;
  const std::string e = corrupt_fp8_error([](auto& t) { t[kQ].bytes[85] = '\x7f'; }, dir);
  EXPECT_NE(e.find("'" + kQ + "' element [1, 5] is NaN"), std::string::npos) << e;
}

TEST(Fp8Blockwise, StaticActivationScalesAreRefused) {
  testing::TempDir dir;
  const Error e = fp8_pack_error([](auto& t) {
    t[kQ.substr(0, kQ.size() - 7) + ".activation_scale"] = {"F32", {}, std::string(4, '\0')};
  }, dir);
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  EXPECT_NE(std::string(e.what()).find("q_proj.activation_scale' (F32 []) is a quantization part"), std::string::npos)
      << e.what();
}

TEST(Fp8Blockwise, UnsupportedVariantsAreRefusedNamingTheField) {
  const auto error = [](nlohmann::json qc) {
    nlohmann::json config = {{"model_type", "qwen3_5"}, {"quantization_config", qc}};
    config["quantization_config"]["quant_method"] = "fp8";
    try {
      detect_fp8_blockwise(config, "ckpt");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error({{"fmt", "e5m2"}}).find("quantization_config.fmt 'e5m2'"), std::string::npos);
  EXPECT_NE(error({{"activation_scheme", "static"}}).find("activation_scheme 'static'"), std::string::npos);
  EXPECT_NE(error({{"scale_fmt", "ue8m0"}}).find("scale_fmt 'ue8m0'"), std::string::npos);
  EXPECT_NE(error({{"weight_block_size", nullptr}}).find("weight_block_size null"), std::string::npos);
  EXPECT_NE(error({{"weight_block_size", {128}}}).find("weight_block_size [128]"), std::string::npos);
  const auto absent = detect_fp8_blockwise({{"quantization_config", {{"quant_method", "fp8"}}}}, "ckpt");
  ASSERT_TRUE(absent);
  EXPECT_EQ(absent->block_rows, 128);  // FineGrainedFP8Config's default
  EXPECT_FALSE(detect_fp8_blockwise({{"model_type", "qwen3"}}, "ckpt"));
}

TEST(MultimodalPack, MixedLayoutIsRefused) {
  testing::TempDir dir;
  const std::string e = corrupt_fp8_error([](auto& t) {
    t["model.norm.weight"] = t.at("model.language_model.norm.weight");
    t.erase("model.language_model.norm.weight");
  }, dir);
  EXPECT_NE(e.find("spelled both as a multimodal checkpoint's"), std::string::npos) << e;
  EXPECT_NE(e.find("'model.norm.weight'"), std::string::npos) << e;
}

}  // namespace
}  // namespace ninfer
