// ninfer-pack end to end: HF directories (single file, shards, prefixed names) → artifact, and bad inputs.
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "engine/artifact/artifact.h"
#include "engine/artifact/artifact_summary.h"
#include "engine/core/error.h"
#include "engine/model/model_artifact.h"
#include "engine/pack/packer.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

class Pack : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = testing::tiny_qwen35_config();
    tensors_ = testing::tiny_qwen35_tensors(config_, true);
    hf_ = dir_.file("hf");
    out_ = dir_.file("out.ninfer");
  }
  std::string pack_error() {
    try {
      pack_hf_checkpoint({.hf_dir = hf_, .output = out_, .show_progress = false});
    } catch (const Error& e) {
      EXPECT_FALSE(fs::exists(path_from_utf8(out_))) << "a failed pack left " << out_;
      for (const auto& e2 : fs::directory_iterator(dir_.path()))
        EXPECT_EQ(e2.path().filename().string().find("partial"), std::string::npos) << e2.path();
      return e.what();
    }
    return "";
  }
  TempDir dir_;
  nlohmann::json config_;
  std::map<std::string, testing::StTensor> tensors_;
  std::string hf_, out_;
};

TEST_F(Pack, TinyHybridRoundTripsWithSectionsAndTokenizerFiles) {
  testing::write_hf_dir(path_from_utf8(hf_), config_, tensors_);
  PackReport r = pack_hf_checkpoint({.hf_dir = hf_, .output = out_, .show_progress = false});
  EXPECT_EQ(r.tensors, tensors_.size());
  Artifact a = Artifact::open(out_, {.verify_checksums = true, .show_progress = false});
  ModelConfig c = load_model_config(a);
  EXPECT_EQ(c.num_linear_attention_layers(), 2);
  EXPECT_EQ(c.num_full_attention_layers(), 1);
  EXPECT_EQ(c.rotary_dim, 4);
  EXPECT_EQ(a.metadata()["architecture"], "qwen3_5");
  EXPECT_EQ(a.metadata()["chat_template"], "{{ messages }}");
  EXPECT_FALSE(a.metadata()["tokenizer_config"].contains("chat_template"));
  EXPECT_EQ(a.metadata()["generation"]["temperature"], 0.6);
  ASSERT_TRUE(a.blob("tokenizer.json").has_value());
  EXPECT_NE(a.blob("tokenizer.json")->find("BPE"), std::string::npos);
  EXPECT_EQ(a.require("mtp.fc.weight").section, "mtp");
  EXPECT_EQ(a.require("model.layers.2.self_attn.q_proj.weight").section, "main");
  // Every byte of every tensor is the source's.
  for (const auto& [name, t] : tensors_) {
    auto d = a.data(a.require(name));
    ASSERT_EQ(d.size(), t.bytes.size()) << name;
    EXPECT_EQ(std::memcmp(d.data(), t.bytes.data(), d.size()), 0) << name;
  }
  ArtifactSummary s = summarize(a);
  EXPECT_EQ(s.tensors_per_section.at("mtp"), 15u);
  EXPECT_EQ(s.tensors_per_section.at("main"), tensors_.size() - 15);
  std::string text = format_summary(a, s);
  EXPECT_NE(text.find("bf16"), std::string::npos) << text;
  EXPECT_NE(text.find("mtp"), std::string::npos) << text;
}

TEST_F(Pack, LanguageModelPrefixIsCanonicalAndVisionIsKeptApart) {
  nlohmann::json mm = {{"model_type", "qwen3_5"}, {"text_config", config_}, {"tie_word_embeddings", false}};
  mm["text_config"]["model_type"] = "qwen3_5_text";
  auto t = testing::tiny_qwen35_tensors(config_, false, "model.language_model.");
  t["model.visual.blocks.0.attn.qkv.weight"] = {"BF16", {6, 4}, testing::random_bf16(24, 99)};
  testing::write_hf_dir(path_from_utf8(hf_), mm, t);
  pack_hf_checkpoint({.hf_dir = hf_, .output = out_, .show_progress = false});
  Artifact a = Artifact::open(out_);
  EXPECT_NO_THROW(load_model_config(a));
  EXPECT_NE(a.find("model.layers.0.linear_attn.A_log"), nullptr);
  EXPECT_EQ(a.find("model.language_model.layers.0.linear_attn.A_log"), nullptr);
  EXPECT_EQ(a.require("model.visual.blocks.0.attn.qkv.weight").section, "vision");
}

TEST(PackNames, SectionsFollowTheNamePrefix) {
  EXPECT_EQ(canonical_tensor_name("model.language_model.norm.weight").name, "model.norm.weight");
  EXPECT_EQ(canonical_tensor_name("model.language_model.norm.weight").section, "main");
  EXPECT_EQ(canonical_tensor_name("mtp.fc.weight").section, "mtp");
  EXPECT_EQ(canonical_tensor_name("dflash2.layers.0.mlp.up_proj.weight").section, "dflash2");
  EXPECT_EQ(canonical_tensor_name("dflash2.layers.0.mlp.up_proj.weight").name, "dflash2.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(canonical_tensor_name("draft_lm_head.weight").section, "draft_lm_head");
  EXPECT_EQ(canonical_tensor_name("draft_lm_head.ids").section, "draft_lm_head");
  EXPECT_EQ(canonical_tensor_name("model.visual.blocks.0.norm1.weight").section, "vision");
  EXPECT_EQ(canonical_tensor_name("lm_head.weight").section, "main");
  EXPECT_EQ(canonical_tensor_name("dflash2x.weight").section, "main");  // the prefix ends at the dot
}

TEST_F(Pack, ShardedCheckpointEqualsSingleFile) {
  std::map<std::string, testing::StTensor> a, b;
  nlohmann::json weight_map;
  int i = 0;
  for (const auto& [name, t] : tensors_) {
    bool first = (i++ % 2) == 0;
    (first ? a : b)[name] = t;
    weight_map[name] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  testing::write_hf_dir(path_from_utf8(hf_), config_, {});
  fs::remove(path_from_utf8(hf_) / "model.safetensors");
  testing::write_file(hf_ + "/model-00001-of-00002.safetensors", testing::make_safetensors(a));
  testing::write_file(hf_ + "/model-00002-of-00002.safetensors", testing::make_safetensors(b));
  testing::write_file(hf_ + "/model.safetensors.index.json", nlohmann::json{{"weight_map", weight_map}}.dump());
  pack_hf_checkpoint({.hf_dir = hf_, .output = out_, .show_progress = false});
  Artifact art = Artifact::open(out_, {.verify_checksums = true, .show_progress = false});
  EXPECT_EQ(art.tensors().size(), tensors_.size());

  fs::remove(path_from_utf8(hf_) / "model-00002-of-00002.safetensors");
  fs::remove(path_from_utf8(out_));
  std::string e = pack_error();
  EXPECT_NE(e.find("shard 'model-00002-of-00002.safetensors'"), std::string::npos) << e;
}

// The index may name only files of the checkpoint's folder: a shard beside it ("../…"), below it or at an absolute
// path is refused, although the file is there and holds the tensors.
TEST_F(Pack, ShardsOutsideTheCheckpointFolderAreRefused) {
  const fs::path dir = path_from_utf8(hf_);
  fs::create_directories(dir / "sub");
  const fs::path outside = dir.parent_path() / "outside-shard.safetensors";
  for (const std::string& name : {std::string("../outside-shard.safetensors"), std::string("sub/model.safetensors"),
                                   path_to_utf8(fs::absolute(outside))}) {
    SCOPED_TRACE(name);
    testing::write_hf_dir(dir, config_, tensors_);
    const std::string bytes = testing::make_safetensors(tensors_);
    testing::write_file(path_to_utf8(outside), bytes);
    testing::write_file(hf_ + "/sub/model.safetensors", bytes);
    fs::remove(dir / "model.safetensors");
    nlohmann::json weight_map;
    for (const auto& [tensor, t] : tensors_) weight_map[tensor] = name;
    testing::write_file(hf_ + "/model.safetensors.index.json", nlohmann::json{{"weight_map", weight_map}}.dump());
    fs::remove(path_from_utf8(out_));
    const std::string e = pack_error();
    EXPECT_NE(e.find("is not a file name in the checkpoint's folder"), std::string::npos) << e;
  }
  fs::remove(outside);
}

TEST_F(Pack, ShapeContradictingConfigFailsBeforeWriting) {
  tensors_["model.layers.1.mlp.up_proj.weight"].shape = {24, 64};
  testing::write_hf_dir(path_from_utf8(hf_), config_, tensors_);
  std::string e = pack_error();
  EXPECT_NE(e.find("model.layers.1.mlp.up_proj.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("[24, 64]"), std::string::npos) << e;
}

TEST_F(Pack, MissingTensorFails) {
  tensors_.erase("model.norm.weight");
  testing::write_hf_dir(path_from_utf8(hf_), config_, tensors_);
  EXPECT_NE(pack_error().find("required tensor 'model.norm.weight' is missing"), std::string::npos);
}

TEST_F(Pack, UnsupportedDtypeFails) {
  tensors_["model.norm.weight"] = {"F64", {32}, std::string(256, '\0')};
  testing::write_hf_dir(path_from_utf8(hf_), config_, tensors_);
  std::string e = pack_error();
  EXPECT_NE(e.find("'model.norm.weight' has dtype F64"), std::string::npos) << e;
}

TEST_F(Pack, UnsupportedTokenizerIsRefusedAtPackTime) {
  // Tokenizer features ninfer-serve could not load are refused by ninfer-pack, naming the field.
  const std::pair<const char*, const char*> cases[] = {
      {R"({"version": "1.0", "model": {"type": "WordPiece", "vocab": {}}})", "model.type 'WordPiece'"},
      {R"({"model": {"type": "BPE", "vocab": {}, "merges": []}, "pre_tokenizer": {"type": "Metaspace"}})",
       "pre_tokenizer.type 'Metaspace'"},
      {R"({"model": {"type": "BPE", "vocab": {}, "merges": []}, "pre_tokenizer": {"type": "Sequence", "pretokenizers":
          [{"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Removed"}, {"type": "ByteLevel"}]}})",
       "pre_tokenizer.pretokenizers[0].behavior 'Removed'"},
  };
  for (const auto& [tokenizer, field] : cases) {
    testing::write_hf_dir(path_from_utf8(hf_), config_, tensors_);
    testing::write_file(hf_ + "/tokenizer.json", tokenizer);
    std::string e = pack_error();
    EXPECT_NE(e.find(field), std::string::npos) << e;
    EXPECT_NE(e.find("refused at pack time"), std::string::npos) << e;
  }
}

TEST_F(Pack, InvalidConfigAndBadSafetensorsFail) {
  testing::write_hf_dir(path_from_utf8(hf_), config_, tensors_);
  testing::write_file(hf_ + "/config.json", "{\"vocab_size\": ");
  EXPECT_NE(pack_error().find("config.json: invalid JSON"), std::string::npos);
  testing::write_file(hf_ + "/config.json", "{\"vocab_size\": 1e400}");  // out_of_range, not parse_error
  EXPECT_NE(pack_error().find("config.json: invalid JSON"), std::string::npos);
  testing::write_hf_dir(path_from_utf8(hf_), config_, tensors_);
  std::string st = testing::read_file(hf_ + "/model.safetensors");
  st[7] = '\x7f';  // header length far past the end
  testing::write_file(hf_ + "/model.safetensors", st);
  std::string e = pack_error();
  EXPECT_NE(e.find("model.safetensors: header length"), std::string::npos) << e;
  EXPECT_EQ(pack_error().find('\n'), std::string::npos) << "one line";
}

TEST_F(Pack, CliExitCodesAndOneErrorLine) {
  std::string bin = std::string(NINFER_BINARY_DIR) + "/apps/ninfer-pack";
  testing::write_hf_dir(path_from_utf8(hf_), config_, tensors_);
  std::string log = dir_.file("log.txt");
  ASSERT_EQ(std::system((bin + " -q --hf " + hf_ + " -o " + out_ + " 2>" + log).c_str()), 0) << testing::read_file(log);
  ASSERT_EQ(std::system((bin + " --inspect " + out_ + " --verify -q >" + log).c_str()), 0);
  std::string inspect = testing::read_file(log);
  EXPECT_NE(inspect.find("tensors"), std::string::npos) << inspect;
  EXPECT_NE(inspect.find("checksums     ok"), std::string::npos) << inspect;

  std::string bad_out = dir_.file("bad.ninfer");
  tensors_.erase("lm_head.weight");
  testing::write_hf_dir(path_from_utf8(hf_), config_, tensors_);
  int rc = std::system((bin + " -q --hf " + hf_ + " -o " + bad_out + " 2>" + log).c_str());
  EXPECT_NE(rc, 0);
  std::string err = testing::read_file(log);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("lm_head.weight"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(path_from_utf8(bad_out)));
}

}  // namespace
}  // namespace ninfer
