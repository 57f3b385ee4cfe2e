// ninfer-tiny in f32 (models/ninfer-tiny.ninfer, the reference of the NVFP4 default model) against transformers' logits
// and greedy continuation.
#include <gtest/gtest.h>

#include <fstream>

#include "engine/model/model_artifact.h"
#include "tests/model/reference_model.h"

namespace ninfer {
namespace {

const std::string kTinyDir = std::string(NINFER_TEST_DATA) + "/ninfer_tiny/";
const std::string kTinyArtifact = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";

nlohmann::json tiny_index() {
  std::ifstream in(kTinyDir + "index.json");
  return nlohmann::json::parse(in);
}

template <typename T>
std::vector<T> tiny_read(const nlohmann::json& entry) {
  std::ifstream in(kTinyDir + entry["file"].get<std::string>(), std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot open fixture " + entry["file"].get<std::string>());
  std::vector<T> v(static_cast<size_t>(in.tellg()) / sizeof(T));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  return v;
}

struct TinyModel : testing::ReferenceModel {
  TinyModel() : ReferenceModel(Packed{kTinyArtifact}) {}
};

TEST(NinferTiny, LogitsMatchTransformersInF32) {
  TinyModel m;
  auto index = tiny_index();
  ASSERT_EQ(m.config.vocab_size, 8192);
  ASSERT_EQ(m.config.mtp_num_layers, 1);
  SeqId id = 1;
  size_t n = 0;
  for (const auto& p : index["models"]["ninfer_tiny"]["prompts"]) {
    auto tokens = tiny_read<int32_t>(p["tokens"]);
    auto want = tiny_read<float>(p["logits"]);
    int32_t slot = m.state->acquire();
    SequenceStep s{id, slot, 0, tokens, true};
    auto got = m.runner->step(std::span(&s, 1));
    EXPECT_LE(testing::rel_err(got, want), 1e-4) << p["what"].get<std::string>() << " (" << tokens.size()
                                                 << " tokens)";
    m.kv->release(id++);
    m.state->release(slot);
    ++n;
  }
  EXPECT_EQ(n, 3u);
}

TEST(NinferTiny, GreedyChatContinuationIsIdentical) {
  TinyModel m;
  auto index = tiny_index();
  const auto& rec = index["models"]["ninfer_tiny"];
  ASSERT_EQ(rec["greedy"].size(), 1u);
  for (const auto& g : rec["greedy"]) {
    auto prompt = tiny_read<int32_t>(rec["prompts"][g["prompt_index"].get<size_t>()]["tokens"]);
    auto want = tiny_read<int32_t>(g["tokens"]);
    int32_t slot = m.state->acquire();
    SequenceStep s{7, slot, 0, prompt, false};
    auto logits = m.runner->step(std::span(&s, 1));
    std::vector<int32_t> got;
    int64_t pos = static_cast<int64_t>(prompt.size());
    for (size_t t = 0; t < want.size(); ++t) {  // no stop tokens: the fixture ignores them too
      got.push_back(testing::ReferenceModel::argmax(logits));
      SequenceStep d{7, slot, pos++, std::span(&got.back(), 1), false};
      logits = m.runner->step(std::span(&d, 1));
    }
    EXPECT_EQ(got, want);
    m.kv->release(7);
    m.state->release(slot);
  }
}

}  // namespace
}  // namespace ninfer
