// Every validation error of the artifact reader, on crafted bad files: each names file, tensor and offset.
#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "engine/artifact/artifact.h"
#include "engine/artifact/artifact_writer.h"
#include "engine/artifact/checksum.h"
#include "engine/artifact/format.h"
#include "engine/core/error.h"
#include "engine/model/model_artifact.h"
#include "engine/pack/packer.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

namespace af = artifact_format;
using testing::TempDir;

uint64_t get_u64(const std::string& s, size_t off) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[off + i]);
  return v;
}
void set_u64(std::string& s, size_t off, uint64_t v) {
  for (int i = 0; i < 8; ++i) s[off + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// Rewrites the metadata JSON in place (it must still fit before the data region) with a valid checksum.
void patch_metadata(const std::string& path, const std::function<void(nlohmann::json&)>& edit) {
  std::string raw = testing::read_file(path);
  uint64_t meta_bytes = get_u64(raw, af::kOffMetaBytes);
  uint64_t data_offset = get_u64(raw, af::kOffDataOffset);
  auto meta = nlohmann::json::parse(raw.substr(af::kHeaderBytes, meta_bytes));
  edit(meta);
  std::string text = meta.dump();
  ASSERT_LE(af::kHeaderBytes + text.size(), data_offset);
  std::memset(raw.data() + af::kHeaderBytes, 0, data_offset - af::kHeaderBytes);
  std::memcpy(raw.data() + af::kHeaderBytes, text.data(), text.size());
  set_u64(raw, af::kOffMetaBytes, text.size());
  set_u64(raw, af::kOffMetaChecksum, checksum64(std::as_bytes(std::span(text))));
  testing::write_file(path, raw);
}

class ArtifactValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("bad.ninfer");
    ArtifactWriter w(nlohmann::json{{"config", {{"model_type", "qwen3"}}}});
    for (const char* name : {"t0", "t1", "t2"}) {
      w.add_tensor({name, "main", DType::kF32, {1000}, [](const ByteSink& sink) {
                      std::string b(4000, '\x11');
                      sink(std::as_bytes(std::span(b)));
                    }});
    }
    w.write(path_, false);
    raw_ = testing::read_file(path_);
  }

  // Expects Artifact::open to throw an Error whose message contains every fragment.
  void expect_open_error(std::initializer_list<std::string> fragments, bool verify = false) {
    try {
      Artifact::open(path_, {.verify_checksums = verify, .show_progress = false});
      FAIL() << "open succeeded, expected an error containing " << *fragments.begin();
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find(path_), std::string::npos) << msg;
      for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "missing '" << f << "' in: " << msg;
    }
  }

  TempDir dir_;
  std::string path_;
  std::string raw_;
};

TEST_F(ArtifactValidation, BadMagic) {
  raw_[0] = 'X';
  testing::write_file(path_, raw_);
  expect_open_error({"bad magic", "byte offset 0"});
}

TEST_F(ArtifactValidation, EmptyAndTinyFiles) {
  testing::write_file(path_, "");
  expect_open_error({"truncated"});
  testing::write_file(path_, raw_.substr(0, 20));
  expect_open_error({"truncated header"});
}

TEST_F(ArtifactValidation, UnsupportedVersion) {
  raw_[af::kOffVersion] = 99;
  testing::write_file(path_, raw_);
  try {
    Artifact::open(path_);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("unsupported artifact version 99"), std::string::npos) << e.what();
  }
}

TEST_F(ArtifactValidation, TruncatedDataRegion) {
  testing::write_file(path_, raw_.substr(0, raw_.size() - 100));
  expect_open_error({"truncated", "data region"});
}

TEST_F(ArtifactValidation, TruncatedMetadata) {
  testing::write_file(path_, raw_.substr(0, af::kHeaderBytes + 10));
  expect_open_error({"truncated", "metadata"});
}

TEST_F(ArtifactValidation, MetadataChecksumMismatch) {
  raw_[af::kHeaderBytes + 5] ^= 0x01;
  testing::write_file(path_, raw_);
  expect_open_error({"metadata checksum mismatch", "byte offset 64"});
}

TEST_F(ArtifactValidation, MetadataNotJson) {
  patch_metadata(path_, [](nlohmann::json&) {});
  std::string raw = testing::read_file(path_);
  uint64_t n = get_u64(raw, af::kOffMetaBytes);
  raw[af::kHeaderBytes + n - 1] = '#';  // break the closing brace, then fix the checksum
  set_u64(raw, af::kOffMetaChecksum, checksum64(std::as_bytes(std::span(raw.data() + af::kHeaderBytes, n))));
  testing::write_file(path_, raw);
  expect_open_error({"not valid JSON"});
}

TEST_F(ArtifactValidation, MetadataNumberBeyondADouble) {
  patch_metadata(path_, [](nlohmann::json& m) { m["x"] = 12345; });
  std::string raw = testing::read_file(path_);
  uint64_t n = get_u64(raw, af::kOffMetaBytes);
  const size_t at = raw.find("12345", af::kHeaderBytes);
  ASSERT_NE(at, std::string::npos);
  raw.replace(at, 5, "1e400");  // nlohmann throws out_of_range here, not parse_error
  set_u64(raw, af::kOffMetaChecksum, checksum64(std::as_bytes(std::span(raw.data() + af::kHeaderBytes, n))));
  testing::write_file(path_, raw);
  expect_open_error({"not valid JSON", "number overflow"});
}

TEST_F(ArtifactValidation, TensorOutOfBounds) {
  patch_metadata(path_, [](nlohmann::json& m) { m["tensors"][2]["offset"] = 1u << 20; });
  expect_open_error({"tensor 't2'", "outside", "data region"});
}

TEST_F(ArtifactValidation, TensorsOverlap) {
  patch_metadata(path_, [](nlohmann::json& m) { m["tensors"][1]["offset"] = m["tensors"][0]["offset"]; });
  expect_open_error({"overlaps", "'t0'", "'t1'"});
}

TEST_F(ArtifactValidation, TensorMisaligned) {
  patch_metadata(path_, [](nlohmann::json& m) { m["tensors"][1]["offset"] = 4096 + 8; });
  expect_open_error({"tensor 't1'", "aligned", "byte offset"});
}

TEST_F(ArtifactValidation, BytesDisagreeWithShape) {
  patch_metadata(path_, [](nlohmann::json& m) { m["tensors"][0]["shape"] = {999}; });
  expect_open_error({"tensor 't0'", "4000 bytes recorded", "needs 3996"});
}

TEST_F(ArtifactValidation, UnknownDtypeAndDuplicateName) {
  patch_metadata(path_, [](nlohmann::json& m) { m["tensors"][0]["dtype"] = "f64"; });
  expect_open_error({"tensor 't0'", "unknown dtype 'f64'"});
  testing::write_file(path_, raw_);
  patch_metadata(path_, [](nlohmann::json& m) { m["tensors"][1]["name"] = "t0"; });
  expect_open_error({"'t0'", "twice"});
}

TEST_F(ArtifactValidation, DataChecksumMismatchOnlyWithVerify) {
  Artifact good = Artifact::open(path_);
  uint64_t off = good.absolute_offset(good.require("t1"));
  raw_[off + 17] ^= 0x40;
  testing::write_file(path_, raw_);
  EXPECT_NO_THROW(Artifact::open(path_));  // header checks only
  expect_open_error({"tensor 't1'", "checksum mismatch", fmt::format("byte offset {}", off)}, true);
}

// Model-level checks: an artifact whose tensors contradict its own config.
class ModelValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config = testing::tiny_qwen35_config();
    testing::write_hf_dir(dir_.path() / "hf", config, testing::tiny_qwen35_tensors(config, true));
    path_ = dir_.file("m.ninfer");
    pack_hf_checkpoint({.hf_dir = dir_.file("hf"), .output = path_, .show_progress = false});
  }
  std::string load_error() {
    try {
      load_model_config(Artifact::open(path_));
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  TempDir dir_;
  std::string path_;
};

TEST_F(ModelValidation, PackedArtifactIsConsistent) { EXPECT_EQ(load_error(), ""); }

TEST_F(ModelValidation, RequiredTensorMissing) {
  patch_metadata(path_, [](nlohmann::json& m) {
    for (auto& t : m["tensors"])
      if (t["name"] == "model.layers.1.linear_attn.A_log") t["name"] = "model.layers.1.linear_attn.renamed";
  });
  std::string e = load_error();
  EXPECT_NE(e.find(path_), std::string::npos) << e;
  EXPECT_NE(e.find("required tensor 'model.layers.1.linear_attn.A_log' is missing"), std::string::npos) << e;
}

TEST_F(ModelValidation, ShapeInconsistentWithConfig) {
  patch_metadata(path_, [](nlohmann::json& m) { m["config"]["intermediate_size"] = 64; });
  std::string e = load_error();
  EXPECT_NE(e.find("model.layers.0.mlp.gate_proj.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("[48, 32]"), std::string::npos) << e;
  EXPECT_NE(e.find("[64, 32]"), std::string::npos) << e;
}

TEST_F(ModelValidation, DtypeInconsistentWithWeightKind) {
  patch_metadata(path_, [](nlohmann::json& m) {
    for (auto& t : m["tensors"])
      if (t["name"] == "model.norm.weight") t["dtype"] = "nvfp4", t["shape"] = {32}, t["bytes"] = 0;
  });
  // nvfp4 [32] is 16 + 2 + trailer bytes: the byte count no longer matches, caught at open.
  EXPECT_NE(load_error().find("model.norm.weight"), std::string::npos);
  patch_metadata(path_, [](nlohmann::json& m) {
    for (auto& t : m["tensors"])
      if (t["name"] == "model.norm.weight") t["dtype"] = "i8", t["shape"] = {32}, t["bytes"] = 32;
  });
  std::string e = load_error();
  EXPECT_NE(e.find("tensor 'model.norm.weight' has dtype i8"), std::string::npos) << e;
}

}  // namespace
}  // namespace ninfer
