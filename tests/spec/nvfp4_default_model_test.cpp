// The default model, models/ninfer-tiny-nvfp4.ninfer (NVFP4 W4A4 from the f32 ninfer-tiny, docs/model-card.md): what
// it carries, and that MTP (full and draft head) and DFlash2 speculative decoding on it give exactly plain greedy
// output while their drafters, trained on the f32 model's hidden states, are still accepted.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "engine/model/model_artifact.h"
#include "engine/runtime/engine.h"
#include "engine/speculative/drafter_registry.h"
#include "engine/tokenizer/reasoning_budget.h"
#include "tests/support/greedy_engine_run.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

const std::string kNvfp4 = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny-nvfp4.ninfer";
const std::string kF32 = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";

std::vector<std::vector<int32_t>> prompts() {
  std::string b = testing::read_file(std::string(NINFER_TEST_DATA) + "/ninfer_tiny/prompt0_tokens.i32");
  std::vector<int32_t> p0(b.size() / 4);
  std::memcpy(p0.data(), b.data(), b.size());
  std::vector<int32_t> p1(p0.begin(), p0.begin() + 9), p2;
  for (int i = 0; i < 41; ++i) p2.push_back((i * 131 + 17) % 8000);
  return {p0, p1, p2};
}

TEST(Nvfp4DefaultModel, IsTheF32ModelsProjectionsInNvfp4WithEveryDraftingSection) {
  Artifact a = Artifact::open(kNvfp4, {.verify_checksums = true, .show_progress = false});
  Artifact f = Artifact::open(kF32);
  EXPECT_EQ(a.metadata()["quantization"]["method"], "nvfp4");
  EXPECT_EQ(a.metadata()["config"], f.metadata()["config"]);
  EXPECT_EQ(*a.blob("tokenizer.json"), *f.blob("tokenizer.json"));
  const std::optional<int64_t> budget = generation_reasoning_budget(a.metadata()["generation"], kNvfp4);
  ASSERT_TRUE(budget) << "the default model carries its default reasoning budget";
  EXPECT_GT(*budget, 0);
  std::set<std::string> sections;
  int nvfp4 = 0;
  for (const TensorInfo& t : a.tensors()) {
    sections.insert(t.section);
    const TensorInfo& ref = f.require(t.name);  // the same tensors as the f32 model, no more
    if (t.dtype == DType::kNVFP4) {
      ++nvfp4;
      EXPECT_EQ(t.section, "main") << t.name;
      EXPECT_EQ(t.shape, ref.shape) << t.name;
    } else {
      EXPECT_EQ(t.checksum, ref.checksum) << t.name << " is not a quantized projection: it must be the f32 model's";
    }
  }
  EXPECT_EQ(a.tensors().size(), f.tensors().size());
  EXPECT_EQ(sections, (std::set<std::string>{"main", "mtp", "draft_lm_head", "dflash2"}));
  // Every projection of the 6 layers but the GDN in_proj_a/b gates (ModelOpt's default exclusions, as the MTP layer):
  // 4 GDN layers × (in_proj_qkv, in_proj_z, out_proj) + 2 attention layers × (q, k, v, o) + 6 MLPs × 3.
  EXPECT_EQ(nvfp4, 4 * 3 + 2 * 4 + 6 * 3);
}

TEST(Nvfp4DefaultModel, SpeculativeGreedyEqualsPlainAndItsDraftsAreAccepted) {
  Artifact a = Artifact::open(kNvfp4);
  ModelConfig c = load_model_config(a);
  const testing::GreedyRun plain = testing::run_greedy(a, c, {}, 0, 512, prompts());
  for (const auto& o : plain.outputs) ASSERT_EQ(o.size(), 40u);
  struct Case {
    const char* method;
    int32_t k;
    bool draft_head;
    double first_accepted_min;  // share of verification steps whose first draft was accepted
  };
  // bench/spec on the model card's prompts (docs/model-card.md): MTP first draft 0.74 accepted, DFlash2 0.50.
  for (const Case& cs : {Case{"mtp", 1, false, 0.5}, Case{"mtp", 3, true, 0.5}, Case{"dflash2", 7, false, 0.3}}) {
    SCOPED_TRACE(::testing::Message() << cs.method << " K=" << cs.k << (cs.draft_head ? " draft head" : ""));
    const testing::GreedyRun spec =
        testing::run_greedy(a, c, make_drafter_factory(cs.method, a, c, cs.draft_head), cs.k, 512, prompts());
    EXPECT_EQ(spec.outputs, plain.outputs);
    int64_t steps = 0, first = 0;
    for (const RequestResult& r : spec.results) {
      steps += r.spec.verify_steps;
      first += r.spec.accepted_at.empty() ? 0 : r.spec.accepted_at[0];
    }
    ASSERT_GT(steps, 0);
    EXPECT_GT(static_cast<double>(first) / static_cast<double>(steps), cs.first_accepted_min) << first << " / " << steps;
  }
}

}  // namespace
}  // namespace ninfer
