// The DFlash2 drafter through the engine's Drafter interface (observe / propose / rollback) against torch fixtures.
#include <gtest/gtest.h>

#include <functional>


#include "tests/support/error_message.h"
#include "engine/artifact/artifact.h"
#include "engine/core/error.h"
#include "engine/model/model_artifact.h"
#include "engine/model/model_weights.h"
#include "engine/pack/packer.h"
#include "engine/speculative/dflash2_spec_drafter.h"
#include "engine/speculative/drafter_registry.h"
#include "tests/dflash2/dflash2_fixtures.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

using dflash2_test::index_json;
using dflash2_test::read_fixture;

struct Fixture : dflash2_test::TargetFixture {

  std::unique_ptr<Drafter> make(int32_t draft_tokens = 7) {
    return make_dflash2_spec_drafter(artifact, target, weights.embed, weights.lm_head, false, store,
                                     DrafterLimits{.max_sequences = 4, .max_context = 512,
                                                   .draft_tokens = draft_tokens});
  }
  // The engine's rows for positions [begin, end) of the fixture text.
  DraftRows rows(const Drafter& d, SeqId seq, int64_t begin, int64_t end) const {
    const int64_t w = d.features().width(target.hidden_size);
    return DraftRows{seq, begin, std::span(tokens).subspan(begin + 1, end - begin),
                     std::span(features).subspan(begin * w, (end - begin) * w)};
  }
  std::vector<int32_t> propose(Drafter& d, SeqId seq, int32_t k) const {
    std::vector<int32_t> out(static_cast<size_t>(k));
    d.propose(std::span(&seq, 1), k, out);
    return out;
  }
};

std::vector<int32_t> prefix(const std::vector<int32_t>& v, int32_t k) { return {v.begin(), v.begin() + k}; }

TEST(Dflash2SpecDrafter, FeatureSpecIsTheConfiguredTargetLayers) {
  Fixture f;
  auto d = f.make();
  EXPECT_EQ(d->features().layers, index_json()["config"]["target_layer_ids"].get<std::vector<int64_t>>());
  EXPECT_FALSE(d->features().final_hidden);
  EXPECT_EQ(d->max_draft_tokens(), 7);
  EXPECT_EQ(f.features.size(),
            static_cast<size_t>(f.ctx * d->features().width(f.target.hidden_size)));
}

TEST(Dflash2SpecDrafter, ObservedRowsGiveTheTorchBlockForEveryK) {
  Fixture f;
  auto d = f.make();
  d->add_sequence(5);
  const DraftRows a = f.rows(*d, 5, 0, 9), b = f.rows(*d, 5, 9, f.ctx);
  d->observe(std::span(&a, 1));
  d->observe(std::span(&b, 1));
  const auto want = read_fixture<int32_t>("full_tokens");
  for (int32_t k = 1; k <= 7; ++k) EXPECT_EQ(f.propose(*d, 5, k), prefix(want, k)) << "k = " << k;
}

TEST(Dflash2SpecDrafter, StartBelowTheHeldLengthRollsBack) {
  Fixture f;
  auto d = f.make();
  d->add_sequence(2);
  d->add_sequence(4);
  const DraftRows both[2] = {f.rows(*d, 2, 0, f.ctx), f.rows(*d, 4, 0, f.short_ctx)};
  d->observe(both);
  f.propose(*d, 2, 7);
  // Sequence 2 "rejects" back to the short context: rows restart at short_ctx − 3 and end at short_ctx.
  const DraftRows back = f.rows(*d, 2, f.short_ctx - 3, f.short_ctx);
  d->observe(std::span(&back, 1));
  const SeqId seqs[2] = {2, 4};
  std::vector<int32_t> drafts(14);
  d->propose(seqs, 7, drafts);
  const auto want = read_fixture<int32_t>("short_tokens");
  EXPECT_EQ(std::vector<int32_t>(drafts.begin(), drafts.begin() + 7), want);
  EXPECT_EQ(std::vector<int32_t>(drafts.begin() + 7, drafts.end()), want);
  // Re-committing the rest gives the full block again; a release forgets the sequence.
  const DraftRows rest = f.rows(*d, 2, f.short_ctx, f.ctx);
  d->observe(std::span(&rest, 1));
  EXPECT_EQ(f.propose(*d, 2, 7), read_fixture<int32_t>("full_tokens"));
  d->release(2);
  EXPECT_THROW(f.propose(*d, 2, 7), Error);
}

TEST(Dflash2SpecDrafter, ContractViolationsAreErrors) {
  Fixture f;
  EXPECT_THROW(f.make(8), Error);  // a block of 8 proposes at most 7
  auto d = f.make();
  d->add_sequence(1);
  EXPECT_THROW(d->add_sequence(1), Error);
  const DraftRows gap = f.rows(*d, 1, 3, 6);  // must start at 0
  EXPECT_THROW(d->observe(std::span(&gap, 1)), Error);
  const DraftRows unknown = f.rows(*d, 8, 0, 4);
  EXPECT_THROW(d->observe(std::span(&unknown, 1)), Error);
  const DraftRows ok = f.rows(*d, 1, 0, 4);
  d->observe(std::span(&ok, 1));
  std::vector<int32_t> out(8);
  const SeqId s = 1;
  EXPECT_THROW(d->propose(std::span(&s, 1), 8, out), Error);
  EXPECT_THROW(d->propose(std::span(&s, 1), 0, out), Error);
}

using testing::error_of;

TEST(Dflash2SpecDrafter, RegistryBuildsItAndNamesAMissingSection) {
  Fixture f;
  EXPECT_EQ(default_draft_tokens("dflash2"), 7);
  for (bool draft_head : {false, true}) {
    DrafterFactory make = make_drafter_factory("dflash2", f.artifact, f.target, draft_head);
    auto d = make(f.store, DrafterLimits{.max_sequences = 2, .max_context = 64, .draft_tokens = 7});
    EXPECT_EQ(d->max_draft_tokens(), 7);
    EXPECT_FALSE(d->features().final_hidden);
    const std::string line = describe_drafter("dflash2", f.artifact, f.target, draft_head);
    EXPECT_NE(line.find("block 8"), std::string::npos) << line;
    EXPECT_NE(line.find(draft_head ? "2048 of 8192" : "8192 rows"), std::string::npos) << line;
  }
  // An artifact without the dflash2 section: refused when the factory is made, naming the file.
  testing::TempDir dir;
  const auto hf = dir.path() / "hf";
  testing::write_hf_dir(hf, testing::tiny_qwen35_config(), testing::tiny_qwen35_tensors(testing::tiny_qwen35_config(), false));
  const std::string out = dir.file("plain.ninfer");
  pack_artifact({.hf_dir = hf.string(), .output = out, .show_progress = false});
  Artifact a = Artifact::open(out);
  const ModelConfig c = load_model_config(a);
  const std::string e = error_of([&] { make_drafter_factory("dflash2", a, c, false); });
  EXPECT_NE(e.find(out), std::string::npos) << e;
  EXPECT_NE(e.find("no DFlash2 drafter"), std::string::npos) << e;
}

}  // namespace
}  // namespace ninfer
