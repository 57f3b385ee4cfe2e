// The DFlash2 drafter of the shipped artifact against torch (tools/dflash2/make_golden.py), cache rollback, config checks.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/artifact/artifact.h"
#include "engine/core/error.h"
#include "engine/model/model_artifact.h"
#include "engine/model/model_weights.h"
#include "engine/speculative/dflash2_drafter.h"
#include "tests/dflash2/dflash2_fixtures.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

using dflash2_test::index_json;
using dflash2_test::kArtifact;
using dflash2_test::read_fixture;

double rel_err(std::span<const float> a, std::span<const float> b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, static_cast<double>(std::abs(a[i] - b[i])));
    den = std::max(den, static_cast<double>(std::abs(b[i])));
  }
  return num / den;
}

struct Fixture : dflash2_test::TargetFixture {

  std::unique_ptr<Dflash2Drafter> drafter(bool draft_head = false) {
    return make_dflash2_drafter(artifact, target, weights.embed, weights.lm_head, draft_head, 4, 1024, store);
  }
  int64_t H() const { return target.hidden_size; }
  int64_t n_feat(const Dflash2Drafter& d) const { return static_cast<int64_t>(d.config().target_layer_ids.size()); }
  // Feature views [rows, H] of fixture rows [begin, begin + rows), one per target layer (strided slices).
  std::vector<Tensor> views(const Dflash2Drafter& d, int64_t begin, int64_t rows) {
    std::vector<Tensor> v;
    const int64_t n = n_feat(d);
    for (int64_t i = 0; i < n; ++i)
      v.push_back(Tensor::strided(features.data() + begin * n * H() + i * H(), DType::kF32, {rows, H()}, {n * H(), 1}));
    return v;
  }
  void append(Dflash2Drafter& d, SeqId seq, int64_t begin, int64_t rows) {
    const int32_t r = static_cast<int32_t>(rows);
    auto v = views(d, begin, rows);
    d.append_context(std::span(&seq, 1), std::span(&r, 1), v);
  }
  std::vector<float> propose(Dflash2Drafter& d, SeqId seq, int32_t anchor, std::vector<int32_t>* toks = nullptr) {
    const int64_t D = d.config().num_draft_tokens();
    std::vector<int32_t> t(static_cast<size_t>(D));
    std::vector<float> logits(static_cast<size_t>(D * d.head_rows()));
    d.propose(std::span(&seq, 1), std::span(&anchor, 1), t, logits);
    if (toks) *toks = t;
    return logits;
  }
};

TEST(Dflash2, ConfigOfTheShippedDrafter) {
  Fixture f;
  auto d = f.drafter();
  const auto want = index_json()["config"];
  const Dflash2Config& c = d->config();
  EXPECT_EQ(c.block_size, want["block_size"].get<int64_t>());
  EXPECT_EQ(c.num_draft_tokens(), 7);
  EXPECT_EQ(c.num_layers, want["num_layers"].get<int64_t>());
  EXPECT_EQ(c.hidden_size, f.target.hidden_size);
  EXPECT_EQ(c.mask_token_id, want["mask_token_id"].get<int64_t>());
  EXPECT_EQ(c.target_layer_ids, want["target_layer_ids"].get<std::vector<int64_t>>());
  EXPECT_EQ(d->head_rows(), f.target.vocab_size);
}

TEST(Dflash2, BlockLogitsMatchTorch) {
  Fixture f;
  auto d = f.drafter();
  const int64_t ctx = index_json()["context_tokens"].get<int64_t>();
  f.append(*d, 1, 0, ctx);
  EXPECT_EQ(d->context_length(1), ctx);
  std::vector<int32_t> toks;
  auto got = f.propose(*d, 1, f.tokens[static_cast<size_t>(ctx)], &toks);
  EXPECT_LE(rel_err(got, read_fixture<float>("full_logits")), 1e-4);
  EXPECT_EQ(toks, read_fixture<int32_t>("full_tokens"));
  // Proposing writes nothing into the context.
  EXPECT_EQ(d->context_length(1), ctx);
}

TEST(Dflash2, ChunkedContextAndBatchedSequencesGiveTheSameBlocks) {
  Fixture f;
  auto d = f.drafter();
  const int64_t ctx = index_json()["context_tokens"].get<int64_t>();
  const int64_t S = index_json()["short_context"].get<int64_t>();
  // Sequence 7: the context in three appends; sequence 9: the short context. One batched proposal for both.
  f.append(*d, 7, 0, 5);
  f.append(*d, 7, 5, 1);
  f.append(*d, 7, 6, ctx - 6);
  f.append(*d, 9, 0, S);
  const SeqId seqs[2] = {7, 9};
  const int32_t anchors[2] = {f.tokens[static_cast<size_t>(ctx)], f.tokens[static_cast<size_t>(S)]};
  const int64_t D = d->config().num_draft_tokens(), V = d->head_rows();
  std::vector<int32_t> toks(static_cast<size_t>(2 * D));
  std::vector<float> logits(static_cast<size_t>(2 * D * V));
  d->propose(seqs, anchors, toks, logits);
  const std::span<const float> all(logits);
  EXPECT_LE(rel_err(all.subspan(0, D * V), read_fixture<float>("full_logits")), 1e-4);
  EXPECT_LE(rel_err(all.subspan(D * V, D * V), read_fixture<float>("short_logits")), 1e-4);
  EXPECT_EQ(std::vector<int32_t>(toks.begin(), toks.begin() + D), read_fixture<int32_t>("full_tokens"));
  EXPECT_EQ(std::vector<int32_t>(toks.begin() + D, toks.end()), read_fixture<int32_t>("short_tokens"));
}

TEST(Dflash2, RollbackLeavesNoTrace) {
  Fixture f;
  auto d = f.drafter();
  const int64_t ctx = index_json()["context_tokens"].get<int64_t>();
  const int64_t S = index_json()["short_context"].get<int64_t>();
  f.append(*d, 3, 0, ctx);
  f.propose(*d, 3, f.tokens[static_cast<size_t>(ctx)]);  // block K/V written past the context
  d->truncate(3, S);                                     // as after a verification that rejected the rest
  EXPECT_EQ(d->context_length(3), S);
  EXPECT_LE(rel_err(f.propose(*d, 3, f.tokens[static_cast<size_t>(S)]), read_fixture<float>("short_logits")), 1e-4);
  f.append(*d, 3, S, ctx - S);                           // re-commit the same tokens
  EXPECT_LE(rel_err(f.propose(*d, 3, f.tokens[static_cast<size_t>(ctx)]), read_fixture<float>("full_logits")), 1e-4);
  d->release(3);
  EXPECT_EQ(d->context_length(3), 0);
}

TEST(Dflash2, DraftLmHeadMatchesTorch) {
  Fixture f;
  ASSERT_TRUE(index_json()["has_draft_head"].get<bool>()) << "the shipped artifact must carry draft_lm_head";
  auto d = f.drafter(/*draft_head=*/true);
  const int64_t ctx = index_json()["context_tokens"].get<int64_t>();
  f.append(*d, 1, 0, ctx);
  std::vector<int32_t> toks;
  auto got = f.propose(*d, 1, f.tokens[static_cast<size_t>(ctx)], &toks);
  EXPECT_LE(rel_err(got, read_fixture<float>("draft_logits")), 1e-4);
  EXPECT_EQ(toks, read_fixture<int32_t>("draft_tokens"));
}

// A copy of the shipped artifact with one dflash2.config entry overwritten (opening does not hash tensors).
std::string patched_copy(const testing::TempDir& dir, int64_t field, float value) {
  Artifact a = Artifact::open(kArtifact);
  const uint64_t off = a.absolute_offset(a.require("dflash2.config")) + static_cast<uint64_t>(field) * 4;
  std::string bytes = testing::read_file(kArtifact);
  std::memcpy(bytes.data() + off, &value, 4);
  const std::string path = dir.file("patched.ninfer");
  testing::write_file(path, bytes);
  return path;
}

void expect_refused(int64_t field, float value, const std::string& needle) {
  testing::TempDir dir;
  Artifact a = Artifact::open(patched_copy(dir, field, value));
  const ModelConfig target = load_model_config(a);
  try {
    load_dflash2_config(a, target);
    ADD_FAILURE() << "field " << field << " = " << value << " was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("patched.ninfer"), std::string::npos) << e.what();
  }
}

TEST(Dflash2, InvalidConfigIsRefusedNamingTheField) {
  namespace fld = dflash2_config_field;
  expect_refused(fld::kFormatVersion, 2, "format_version 2");
  expect_refused(fld::kBlockSize, 1, "block_size");
  expect_refused(fld::kBlockSize, 8.5f, "block_size");
  expect_refused(fld::kMaskTokenId, 8192, "mask_token_id");
  expect_refused(fld::kHiddenSize, 128, "hidden_size 128 differs");
  expect_refused(fld::kTargetLayerIds, 6, "target_layer_ids");
  expect_refused(fld::kNumLayers, 3, "dflash2.layers.2.input_layernorm.weight");
  expect_refused(fld::kIntermediateSize, 512, "implies [512,256]");
}

}  // namespace
}  // namespace ninfer
