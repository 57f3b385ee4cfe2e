// ninfer-pack --from: re-pack of the shipped artifact, --add-safetensors routing and clashes, --draft-vocab vs HF tokenizers.
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/artifact/artifact.h"
#include "engine/core/error.h"
#include "engine/model/model_artifact.h"
#include "engine/pack/packer.h"
#include "tests/support/pack_error.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const std::string kTiny = std::string(NINFER_TEST_DATA) + "/../../models/ninfer-tiny.ninfer";
const std::string kDraft = std::string(NINFER_TEST_DATA) + "/quant/draft_vocab";

std::string f32_bytes(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

std::vector<int32_t> read_i32_file(const std::string& path) {
  std::string b = testing::read_file(path);
  std::vector<int32_t> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

using testing::pack_error;

TEST(PackRepack, CopiesEveryTensorBlobAndMetadataAndAddsSafetensorsBySection) {
  TempDir dir;
  const std::string extra = dir.file("extra.safetensors"), out = dir.file("out.ninfer");
  testing::write_file(extra, testing::make_safetensors(
                                 {{"dflash2.test_extra.up_proj.weight", {"F32", {2, 16}, f32_bytes(std::vector<float>(32, 0.5f))}},
                                  {"dflash2.test_extra.config", {"F32", {3}, f32_bytes({1, 2, 3})}},
                                  {"draft_lm_head.extra", {"BF16", {4}, testing::random_bf16(4, 7)}}}));
  PackReport r = pack_artifact({.from_artifact = kTiny, .add_safetensors = {extra}, .output = out, .show_progress = false});
  Artifact src = Artifact::open(kTiny);
  Artifact a = Artifact::open(out, {.verify_checksums = true, .show_progress = false});
  EXPECT_NO_THROW(load_model_config(a));
  EXPECT_EQ(r.tensors, src.tensors().size() + 3);
  for (const TensorInfo& t : src.tensors()) {
    const TensorInfo& u = a.require(t.name);
    EXPECT_EQ(u.section, t.section) << t.name;
    EXPECT_EQ(u.dtype, t.dtype) << t.name;
    EXPECT_EQ(u.shape, t.shape) << t.name;
    EXPECT_EQ(u.checksum, t.checksum) << t.name;
  }
  EXPECT_EQ(a.require("dflash2.test_extra.config").section, "dflash2");
  EXPECT_EQ(a.require("dflash2.test_extra.up_proj.weight").section, "dflash2");
  EXPECT_EQ(a.require("draft_lm_head.extra").section, "draft_lm_head");
  EXPECT_EQ(a.require("draft_lm_head.extra").dtype, DType::kBF16);
  ASSERT_TRUE(a.blob("tokenizer.json").has_value());
  EXPECT_EQ(*a.blob("tokenizer.json"), *src.blob("tokenizer.json"));
  for (const char* key : {"config", "generation", "tokenizer_config", "chat_template", "architecture", "quantization"})
    EXPECT_EQ(a.metadata()[key], src.metadata()[key]) << key;
  EXPECT_EQ(a.metadata()["repacked_from"], kTiny);
}

TEST(PackRepack, NameClashWithTheSourceIsAnErrorNamingTheTensor) {
  TempDir dir;
  const std::string extra = dir.file("extra.safetensors");
  testing::write_file(extra, testing::make_safetensors({{"model.norm.weight", {"F32", {2}, f32_bytes({1, 2})}}}));
  std::string e = pack_error({.from_artifact = kTiny, .add_safetensors = {extra}, .output = dir.file("o.ninfer"),
                              .show_progress = false});
  EXPECT_NE(e.find("'model.norm.weight'"), std::string::npos) << e;
  EXPECT_NE(e.find("clashes"), std::string::npos) << e;
  // Two added files clashing with each other, too.
  const std::string a = dir.file("a.safetensors"), b = dir.file("b.safetensors");
  testing::write_file(a, testing::make_safetensors({{"dflash2.x", {"F32", {1}, f32_bytes({1})}}}));
  testing::write_file(b, testing::make_safetensors({{"dflash2.x", {"F32", {1}, f32_bytes({2})}}}));
  e = pack_error({.from_artifact = kTiny, .add_safetensors = {a, b}, .output = dir.file("o.ninfer"), .show_progress = false});
  EXPECT_NE(e.find("'dflash2.x'"), std::string::npos) << e;
  EXPECT_NE(pack_error({.hf_dir = dir.file("x"), .from_artifact = kTiny, .output = dir.file("o.ninfer")}).find("exactly one"),
            std::string::npos);
}

TEST(PackRepack, DraftVocabMatchesHfTokenizersCountsAndCopiesLmHeadRows) {
  TempDir dir;
  const std::string out = dir.file("draft.ninfer");
  const nlohmann::json golden = nlohmann::json::parse(testing::read_file(kDraft + "/golden.json"));
  const int64_t n = golden["n"].get<int64_t>();
  PackReport r = pack_artifact({.from_artifact = kTiny, .output = out,
                                .draft = {.vocab = n, .corpus = {kDraft}}, .show_progress = false});
  EXPECT_EQ(r.draft_vocab, static_cast<size_t>(n));
  Artifact a = Artifact::open(out, {.verify_checksums = true, .show_progress = false});
  const TensorInfo& ids_t = a.require("draft_lm_head.ids");
  EXPECT_EQ(ids_t.section, "draft_lm_head");
  EXPECT_EQ(ids_t.dtype, DType::kI32);
  ASSERT_EQ(ids_t.shape, std::vector<int64_t>{n});
  std::vector<int32_t> ids(static_cast<size_t>(n));
  std::memcpy(ids.data(), a.data(ids_t).data(), ids.size() * 4);
  EXPECT_EQ(ids, read_i32_file(kDraft + "/golden_N" + std::to_string(n) + ".i32"));
  EXPECT_EQ(a.metadata()["draft_lm_head"]["forced_ids"], golden["forced"]);
  EXPECT_EQ(a.metadata()["draft_lm_head"]["corpus_tokens"], golden["corpus_tokens"]);
  EXPECT_NEAR(r.draft_coverage, golden["covered_tokens"].get<double>() / golden["corpus_tokens"].get<double>(), 1e-12);

  // Rows are the full lm_head's (the tied embedding when tie_word_embeddings), same dtype.
  const bool tied = a.config().value("tie_word_embeddings", false);
  const TensorInfo& head = a.require(tied && !a.find("lm_head.weight") ? "model.embed_tokens.weight" : "lm_head.weight");
  const TensorInfo& w = a.require("draft_lm_head.weight");
  EXPECT_EQ(w.section, "draft_lm_head");
  EXPECT_EQ(w.dtype, head.dtype);
  ASSERT_EQ(w.shape, (std::vector<int64_t>{n, head.shape[1]}));
  const uint64_t row = head.bytes / static_cast<uint64_t>(head.shape[0]);
  for (size_t i = 0; i < ids.size(); ++i)
    ASSERT_EQ(std::memcmp(a.data(w).data() + i * row, a.data(head).data() + static_cast<uint64_t>(ids[i]) * row, row), 0)
        << "row " << i << " id " << ids[i];
}

TEST(PackRepack, DraftVocabErrors) {
  TempDir dir;
  const std::string out = dir.file("o.ninfer");
  EXPECT_NE(pack_error({.from_artifact = kTiny, .output = out, .draft = {.vocab = 5, .corpus = {kDraft}}})
                .find("smaller than the"),
            std::string::npos);
  EXPECT_NE(pack_error({.from_artifact = kTiny, .output = out, .draft = {.vocab = 1 << 30, .corpus = {kDraft}}})
                .find("--draft-vocab"),
            std::string::npos);
  EXPECT_NE(pack_error({.from_artifact = kTiny, .output = out, .draft = {.vocab = 100, .corpus = {dir.file("nope")}}})
                .find("nope"),
            std::string::npos);
  EXPECT_NE(pack_error({.from_artifact = kTiny, .output = out, .draft = {.vocab = 100}}).find("--draft-corpus"),
            std::string::npos);
}

// --draft-vocab forces the checkpoint's eos ids into the draft vocabulary: eos_token_id must be an id or a list of
// ids; an integer beyond int32 (once truncated into another id), a negative one, a nested list or a string is
// refused naming the file.
TEST(PackRepack, DraftVocabRefusesAnEosTokenIdThatIsNoTokenId) {
  TempDir dir;
  const std::string ck = dir.file("ck");
  fs::copy(std::string(NINFER_TEST_DATA) + "/serve/model", ck);
  for (const char* eos : {"4294967301", "-3", "[1, [2]]", "\"</s>\""}) {
    SCOPED_TRACE(eos);
    testing::write_file(ck + "/generation_config.json", std::string(R"({"eos_token_id": )") + eos + "}");
    const std::string err = pack_error(
        {.hf_dir = ck, .output = dir.file("o.ninfer"), .draft = {.vocab = 300, .corpus = {kDraft}}});
    EXPECT_NE(err.find("generation_config.json: eos_token_id"), std::string::npos) << err;
    EXPECT_NE(err.find("is not a token id"), std::string::npos) << err;
  }
  testing::write_file(ck + "/generation_config.json", R"({"eos_token_id": [1, 2]})");
  EXPECT_NO_THROW(pack_artifact({.hf_dir = ck, .output = dir.file("o.ninfer"),
                                 .draft = {.vocab = 300, .corpus = {kDraft}}, .show_progress = false}));
}

// --reasoning-budget N writes the artifact's default reasoning budget into its generation config (ninfer-serve's
// default when neither the request nor its own flag gives one); a repack keeps it, -1 removes it, and a source whose
// value is not a token count is refused before anything is written.
TEST(PackRepack, ReasoningBudgetIsWrittenIntoTheGenerationConfig) {
  TempDir dir;
  const std::string with = dir.file("with.ninfer"), kept = dir.file("kept.ninfer"), without = dir.file("without.ninfer");
  Artifact src = Artifact::open(kTiny);
  nlohmann::json gen = src.metadata()["generation"];
  gen.erase("reasoning_budget");
  pack_artifact({.from_artifact = kTiny, .output = with, .show_progress = false, .reasoning_budget = 7});
  nlohmann::json want = gen;
  want["reasoning_budget"] = 7;
  EXPECT_EQ(Artifact::open(with).metadata()["generation"], want);
  pack_artifact({.from_artifact = with, .output = kept, .show_progress = false});
  EXPECT_EQ(Artifact::open(kept).metadata()["generation"], want);
  pack_artifact({.from_artifact = with, .output = without, .show_progress = false, .reasoning_budget = -1});
  EXPECT_EQ(Artifact::open(without).metadata()["generation"], gen);
  EXPECT_NE(pack_error({.from_artifact = kTiny, .output = dir.file("bad.ninfer"), .reasoning_budget = -2})
                .find("--reasoning-budget -2"),
            std::string::npos);

  const std::string ck = dir.file("ck");
  fs::copy(std::string(NINFER_TEST_DATA) + "/reference/models/qwen35_tied", ck);
  testing::write_file(ck + "/generation_config.json", R"({"eos_token_id": 1, "reasoning_budget": "short"})");
  const std::string err = pack_error({.hf_dir = ck, .output = dir.file("ck.ninfer")});
  EXPECT_NE(err.find(ck + "/generation_config.json: generation config reasoning_budget \"short\""), std::string::npos)
      << err;
  testing::write_file(ck + "/generation_config.json", R"({"eos_token_id": 1, "reasoning_budget": 12})");
  pack_artifact({.hf_dir = ck, .output = dir.file("ck.ninfer"), .show_progress = false});
  EXPECT_EQ(Artifact::open(dir.file("ck.ninfer")).metadata()["generation"]["reasoning_budget"], 12);
}

}  // namespace
}  // namespace ninfer
