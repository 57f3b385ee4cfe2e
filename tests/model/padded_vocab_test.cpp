// Padded vocabularies (config vocab_size > the tokenizer's ids): ninfer-pack drops the tokenless rows, so the
// engine's logits cover exactly the ids with a token, equal to transformers' logits on those ids, and nothing that
// samples, verifies or reports logprobs from them can name a tokenless id.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/hf/safetensors.h"
#include "engine/pack/packer.h"
#include "engine/pack/vocab_padding.h"
#include "engine/runtime/sampling.h"
#include "tests/model/reference_model.h"

namespace ninfer {
namespace {

namespace fs = std::filesystem;
using testing::ReferenceModel;

const std::string kRoot = std::string(NINFER_TEST_DATA) + "/reference/hf_config/";
constexpr int64_t kTokenIds = 200;  // the checkpoint's vocab_size is 256

// A byte-level BPE tokenizer.json with `model_ids` vocabulary entries and `added` added tokens after them.
std::string tokenizer_json(int64_t model_ids, int64_t added, int64_t skip_id = -1) {
  nlohmann::json vocab = nlohmann::json::object(), added_tokens = nlohmann::json::array();
  for (int64_t i = 0; i < model_ids; ++i)
    if (i != skip_id) vocab["t" + std::to_string(i)] = i;
  for (int64_t i = model_ids; i < model_ids + added; ++i)
    added_tokens.push_back({{"id", i}, {"content", "<|x" + std::to_string(i) + "|>"}, {"special", true}});
  return nlohmann::json{{"version", "1.0"},
                        {"added_tokens", added_tokens},
                        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}}
      .dump();
}

template <typename T>
std::vector<T> read_raw(const std::string& rel) {
  std::ifstream in(kRoot + rel, std::ios::binary | std::ios::ate);
  std::vector<T> v(static_cast<size_t>(in.tellg()) / sizeof(T));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  return v;
}

TEST(PaddedVocab, PackDropsTokenlessIdsAndTheRestMatchesTransformers) {
  testing::TempDir dir;
  const fs::path hf = dir.path() / "hf";
  fs::copy(fs::path(kRoot) / "models/qwen35_rope_dim7", hf);
  testing::write_file((hf / "tokenizer.json").string(), tokenizer_json(kTokenIds - 10, 10));
  const std::string out = dir.file("padded.ninfer");
  pack_hf_checkpoint({.hf_dir = hf.string(), .output = out, .show_progress = false});

  ReferenceModel m(ReferenceModel::Packed{out});
  ASSERT_EQ(m.config.vocab_size, kTokenIds);
  const nlohmann::json& meta = m.artifact->metadata();
  EXPECT_EQ(meta["config"]["vocab_size"], kTokenIds);
  EXPECT_EQ(meta["vocab_padding"], (nlohmann::json{{"vocab_size", 256}, {"tokenizer_ids", kTokenIds},
                                                   {"dropped_rows", 256 - kTokenIds}}));
  // The kept rows are the checkpoint's first rows, byte for byte.
  const SafetensorsFile src = SafetensorsFile::open((hf / "model.safetensors").string());
  for (const char* name : {"model.embed_tokens.weight", "lm_head.weight"}) {
    const auto want = src.tensors().at(name).data;
    const auto got = m.artifact->data(m.artifact->require(name));
    ASSERT_EQ(got.size() * 256, want.size() * static_cast<size_t>(kTokenIds)) << name;
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0) << name;
  }

  // Logits of every position: transformers' logits of the ids that have a token.
  std::ifstream in(kRoot + "index.json");
  const nlohmann::json padded = nlohmann::json::parse(in)["models"]["qwen35_rope_dim7"]["padded_vocab"];
  ASSERT_EQ(padded["tokenizer_ids"], kTokenIds);
  const auto tokens = read_raw<int32_t>(padded["tokens"]["file"]);
  const auto full = read_raw<float>(padded["logits"]["file"]);  // [T, 256]
  std::vector<float> want;
  for (size_t t = 0; t < tokens.size(); ++t)
    want.insert(want.end(), full.begin() + static_cast<ptrdiff_t>(t * 256),
                full.begin() + static_cast<ptrdiff_t>(t * 256 + kTokenIds));
  int32_t slot = m.state->acquire();
  SequenceStep s{1, slot, 0, tokens, true};
  const auto step = m.runner->step(std::span(&s, 1));
  std::vector<float> got(step.begin(), step.end());
  ASSERT_EQ(got.size(), want.size());
  EXPECT_LE(testing::rel_err(got, want), 1e-4);
  m.kv->release(1);
  m.state->release(slot);

  // Sampling, speculative verification and logprobs draw from these rows: every id they name has a token.
  SamplingParams params;
  params.temperature = 4.0f;
  params.top_logprobs = 20;
  params.logprobs = true;
  Sampler sampler(params, 7, tokens);
  for (size_t t = 0; t < tokens.size(); ++t) {
    std::vector<float> row(got.begin() + static_cast<ptrdiff_t>(t * kTokenIds),
                           got.begin() + static_cast<ptrdiff_t>((t + 1) * kTokenIds));
    std::vector<float> copy = row;
    const SampledToken a = sampler.sample(row);
    bool accepted = false;
    const SampledToken b = sampler.verify(copy, kTokenIds - 1, accepted);
    for (const SampledToken& tok : {a, b}) {
      EXPECT_LT(tok.id, kTokenIds);
      ASSERT_EQ(tok.top.size(), 20u);
      for (const auto& [id, lp] : tok.top) EXPECT_LT(id, kTokenIds);
    }
  }
}

TEST(PaddedVocab, TokenizerIdsMustBeContiguousAndFitTheVocabulary) {
  EXPECT_EQ(tokenizer_id_count(tokenizer_json(190, 10), "t"), 200);
  EXPECT_EQ(tokenizer_id_count(R"({"version": "1.0", "model": {"type": "BPE"}})", "t"), 0);
  try {
    tokenizer_id_count(tokenizer_json(190, 10, 57), "tok");
    ADD_FAILURE() << "a hole was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tok: tokenizer.json has no token for id 57"), std::string::npos) << e.what();
  }
  testing::TempDir dir;
  const fs::path hf = dir.path() / "hf";
  fs::copy(fs::path(kRoot) / "models/qwen35_rope_dim7", hf);
  testing::write_file((hf / "tokenizer.json").string(), tokenizer_json(250, 10));
  try {
    pack_hf_checkpoint({.hf_dir = hf.string(), .output = dir.file("x.ninfer"), .show_progress = false});
    ADD_FAILURE() << "260 token ids packed into a vocabulary of 256";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.json defines 260 token ids but vocab_size is 256"),
              std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir.path() / "x.ninfer"));
}

}  // namespace
}  // namespace ninfer
