// Packs every transformers-made reference checkpoint (tests/data/reference, tools/reference/make_fixtures.py)
// and checks the artifact against the checkpoint: config, weight schema and every tensor byte.
#include <cstring>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/artifact/artifact.h"
#include "engine/hf/hf_checkpoint.h"
#include "engine/model/model_artifact.h"
#include "engine/pack/packer.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

nlohmann::json reference_index() {
  std::ifstream in(std::string(NINFER_TEST_DATA) + "/reference/index.json");
  return nlohmann::json::parse(in);
}

TEST(ReferencePack, EveryFixtureCheckpointPacksAndValidates) {
  auto index = reference_index();
  ASSERT_GE(index["models"].size(), 3u);
  testing::TempDir dir;
  for (auto it = index["models"].begin(); it != index["models"].end(); ++it) {
    SCOPED_TRACE(it.key());
    std::string hf = std::string(NINFER_TEST_DATA) + "/reference/" + it.value()["checkpoint"].get<std::string>();
    std::string out = dir.file(it.key() + ".ninfer");
    PackReport r = pack_hf_checkpoint({.hf_dir = hf, .output = out, .show_progress = false});
    Artifact a = Artifact::open(out, {.verify_checksums = true, .show_progress = false});
    ModelConfig c = load_model_config(a);
    HfCheckpoint ck = HfCheckpoint::open(hf);
    const auto& ref = ck.config;  // written by transformers' save_pretrained
    EXPECT_EQ(c.hidden_size, ref["hidden_size"].get<int64_t>());
    EXPECT_EQ(c.num_layers, ref["num_hidden_layers"].get<int64_t>());
    EXPECT_EQ(c.tie_word_embeddings, ref.value("tie_word_embeddings", false));
    if (ref.contains("layer_types")) {
      ASSERT_EQ(c.layer_types.size(), ref["layer_types"].size());
      for (size_t i = 0; i < c.layer_types.size(); ++i)
        EXPECT_EQ(c.layer_types[i] == LayerType::kFullAttention, ref["layer_types"][i] == "full_attention") << i;
    }
    EXPECT_EQ(r.tensors, ck.tensors.size());
    for (const auto& [name, t] : ck.tensors) {
      auto d = a.data(a.require(canonical_tensor_name(name).name));
      ASSERT_EQ(d.size(), t->data.size()) << name;
      EXPECT_EQ(std::memcmp(d.data(), t->data.data(), d.size()), 0) << name;
    }
  }
}

}  // namespace
}  // namespace ninfer
