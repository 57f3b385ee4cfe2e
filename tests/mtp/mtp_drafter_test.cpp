// The MTP drafter on ninfer-tiny in f32 (models/ninfer-tiny.ninfer) against transformers + the torch MTP head
// (tests/data/mtp, tools/mtp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "tests/support/error_message.h"
#include "engine/core/error.h"
#include "engine/model/model_artifact.h"
#include "engine/pack/packer.h"
#include "engine/speculative/drafter_registry.h"
#include "engine/speculative/mtp_drafter.h"
#include "tests/model/reference_model.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

const std::string kArtifact = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";
const std::string kMtpDir = std::string(NINFER_TEST_DATA) + "/mtp/";
const std::string kTinyDir = std::string(NINFER_TEST_DATA) + "/ninfer_tiny/";

template <typename T>
std::vector<T> read_raw(const std::string& path) {
  std::string b = testing::read_file(path);
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

struct Tiny {
  Tiny() : artifact(Artifact::open(kArtifact)), config(load_model_config(artifact)), backend(make_cpu_backend({.threads = 2})) {}

  std::unique_ptr<MtpDrafter> drafter(const MtpOptions& o = {}, int32_t k = 8, int32_t seqs = 4) {
    return std::make_unique<MtpDrafter>(config, MtpWeights::bind(artifact, config, o.lm_head_draft), *backend,
                                        DrafterLimits{.max_sequences = seqs, .max_context = 256, .draft_tokens = k}, o);
  }

  Artifact artifact;
  ModelConfig config;
  std::unique_ptr<Backend> backend;
};

// Prompt 0 and its first greedy token g0: tokens x_0..x_28, target hidden rows h_0..h_27.
struct Prompt0 {
  Prompt0() {
    tokens = read_raw<int32_t>(kTinyDir + "prompt0_tokens.i32");
    tokens.push_back(read_raw<int32_t>(kTinyDir + "greedy0_tokens.i32").at(0));
    post = read_raw<float>(kMtpDir + "prompt0_hidden_post.f32");
    pre = read_raw<float>(kMtpDir + "prompt0_hidden_pre.f32");
  }
  // Rows [begin, end) of sequence `seq`: features h_p and next tokens x_{p+1}.
  DraftRows rows(SeqId seq, int64_t begin, int64_t end, bool use_pre = false) const {
    const std::vector<float>& h = use_pre ? pre : post;
    return DraftRows{seq, begin, std::span(tokens).subspan(static_cast<size_t>(begin + 1), static_cast<size_t>(end - begin)),
                     std::span(h).subspan(static_cast<size_t>(begin * kHidden), static_cast<size_t>((end - begin) * kHidden))};
  }
  static constexpr int64_t kHidden = 256;
  std::vector<int32_t> tokens;
  std::vector<float> post, pre;
};

TEST(MtpDrafter, HeadMatchesTransformersAtEveryPromptRow) {
  Tiny t;
  Prompt0 p;
  auto d = t.drafter();
  EXPECT_TRUE(d->features().final_hidden);
  EXPECT_TRUE(d->features().layers.empty());
  const std::vector<float> want = read_raw<float>(kTinyDir + "prompt0_mtp_logits.f32");  // [27, V]
  ASSERT_EQ(want.size(), 27u * 8192u);
  d->add_sequence(1);
  std::vector<float> got(want.size());
  DraftRows r = p.rows(1, 0, 27);
  d->observe(std::span(&r, 1), got);
  EXPECT_LE(testing::rel_err(got, want), 1e-4);
  EXPECT_EQ(d->held(1), 27);
}

TEST(MtpDrafter, ChunkedObserveGivesTheSameScores) {
  Tiny t;
  Prompt0 p;
  auto whole = t.drafter(), chunked = t.drafter();
  whole->add_sequence(7);
  chunked->add_sequence(7);
  std::vector<float> a(27 * 8192), b(27 * 8192);
  DraftRows r = p.rows(7, 0, 27);
  whole->observe(std::span(&r, 1), a);
  for (auto [begin, end] : {std::pair{0, 5}, {5, 6}, {6, 19}, {19, 27}}) {
    DraftRows c = p.rows(7, begin, end);
    chunked->observe(std::span(&c, 1), std::span(b).subspan(static_cast<size_t>(begin) * 8192, (end - begin) * 8192u));
  }
  EXPECT_LE(testing::rel_err(b, a), 1e-5);
}

// Observe prompt 0 with g0 (28 rows) and draft 8 tokens; compare with the torch chain.
void expect_chain(Tiny& t, const MtpOptions& o, const std::string& name) {
  Prompt0 p;
  auto d = t.drafter(o);
  d->add_sequence(3);
  DraftRows r = p.rows(3, 0, 28);
  d->observe(std::span(&r, 1));
  std::vector<int32_t> drafts(8);
  std::vector<float> logits(8 * static_cast<size_t>(d->head_rows()));
  const SeqId seq = 3;
  d->propose(std::span(&seq, 1), 8, drafts, logits);
  EXPECT_EQ(drafts, read_raw<int32_t>(kMtpDir + "chain_" + name + "_tokens.i32")) << name;
  EXPECT_LE(testing::rel_err(logits, read_raw<float>(kMtpDir + "chain_" + name + "_logits.f32")), 1e-4) << name;
  EXPECT_EQ(d->held(3), 28) << "drafting must not commit anything";
}

TEST(MtpDrafter, RecursionAfterMtpNormMatchesTorchChain) {
  Tiny t;
  expect_chain(t, {}, "after_norm");
}

TEST(MtpDrafter, RecursionBeforeMtpNormMatchesTorchChain) {
  Tiny t;
  expect_chain(t, {.recursion = MtpRecursion::kBeforeNorm}, "before_norm");
}

TEST(MtpDrafter, DraftHeadScoresItsRowsAndMapsIdsBack) {
  Tiny t;
  Prompt0 p;
  auto d = t.drafter({.lm_head_draft = true});
  ASSERT_EQ(d->head_rows(), 2048);
  d->add_sequence(1);
  DraftRows r = p.rows(1, 0, 28);
  d->observe(std::span(&r, 1));
  std::vector<int32_t> drafts(8);
  std::vector<float> logits(8 * 2048);
  const SeqId seq = 1;
  d->propose(std::span(&seq, 1), 8, drafts, logits);
  EXPECT_EQ(drafts, read_raw<int32_t>(kMtpDir + "draft_head_chain_tokens.i32"));
  // Row i of the draft head is full-vocabulary row ids[i]: its scores are the full head's at those ids.
  const std::vector<float> full = read_raw<float>(kMtpDir + "chain_after_norm_logits.f32");
  const TensorInfo& ids_info = t.artifact.require("draft_lm_head.ids");
  std::vector<int32_t> ids(2048);
  std::memcpy(ids.data(), t.artifact.data(ids_info).data(), ids.size() * 4);
  std::vector<float> picked(8 * 2048);
  for (size_t j = 0; j < 8; ++j)
    for (size_t i = 0; i < 2048; ++i) picked[j * 2048 + i] = full[j * 8192 + static_cast<size_t>(ids[i])];
  EXPECT_LE(testing::rel_err(logits, picked), 1e-4);
}

TEST(MtpDrafter, PreNormHiddenIsAnotherFeatureAndAnotherHead) {
  Tiny t;
  Prompt0 p;
  auto d = t.drafter({.hidden = MtpHidden::kPreFinalNorm});
  EXPECT_FALSE(d->features().final_hidden);
  EXPECT_EQ(d->features().layers, std::vector<int64_t>{5});
  d->add_sequence(1);
  std::vector<float> got(27 * 8192);
  DraftRows r = p.rows(1, 0, 27, /*use_pre=*/true);
  d->observe(std::span(&r, 1), got);
  // Conditioned on the pre-norm residual the head is not the one transformers trained (docs/mtp.md).
  EXPECT_GT(testing::rel_err(got, read_raw<float>(kTinyDir + "prompt0_mtp_logits.f32")), 1e-2);
}

TEST(MtpDrafter, RollbackLeavesNoTraceOfDraftsOrDiscardedRows) {
  Tiny t;
  Prompt0 p;
  auto fresh = t.drafter(), d = t.drafter();
  const SeqId seq = 5;
  fresh->add_sequence(seq);
  d->add_sequence(seq);
  DraftRows all = p.rows(seq, 0, 28);
  fresh->observe(std::span(&all, 1));
  std::vector<int32_t> want(8), got(8);
  fresh->propose(std::span(&seq, 1), 8, want);

  // Another continuation after position 12 (wrong features and tokens), drafted from, then rolled back to 12.
  DraftRows head = p.rows(seq, 0, 12);
  d->observe(std::span(&head, 1));
  std::vector<int32_t> wrong_tokens(10, 42);
  std::vector<float> wrong_features(10 * 256, 0.5f);
  DraftRows wrong{seq, 12, wrong_tokens, wrong_features};
  d->observe(std::span(&wrong, 1));
  d->propose(std::span(&seq, 1), 8, got);
  ASSERT_EQ(d->held(seq), 22);
  DraftRows rest = p.rows(seq, 12, 28);
  d->observe(std::span(&rest, 1));
  d->propose(std::span(&seq, 1), 8, got);
  EXPECT_EQ(got, want);
  // Re-observing the newest committed rows (start below what it holds) changes nothing either.
  DraftRows tail = p.rows(seq, 25, 28);
  d->observe(std::span(&tail, 1));
  d->propose(std::span(&seq, 1), 8, got);
  EXPECT_EQ(got, want);
}

TEST(MtpDrafter, BatchOfSequencesEqualsEachAlone) {
  Tiny t;
  Prompt0 p;
  const std::vector<std::pair<SeqId, int64_t>> seqs = {{10, 28}, {11, 9}, {12, 17}, {13, 1}};
  std::vector<std::vector<int32_t>> alone;
  for (auto [id, n] : seqs) {
    auto d = t.drafter();
    d->add_sequence(id);
    DraftRows r = p.rows(id, 0, n);
    d->observe(std::span(&r, 1));
    std::vector<int32_t> out(5);
    d->propose(std::span(&id, 1), 5, out);
    alone.push_back(out);
  }
  auto d = t.drafter();
  std::vector<DraftRows> rows;
  std::vector<SeqId> ids;
  for (auto [id, n] : seqs) {
    d->add_sequence(id);
    rows.push_back(p.rows(id, 0, n));
    ids.push_back(id);
  }
  d->observe(rows);
  std::vector<int32_t> out(5 * seqs.size());
  d->propose(ids, 5, out);
  for (size_t s = 0; s < seqs.size(); ++s)
    EXPECT_EQ(std::vector<int32_t>(out.begin() + static_cast<std::ptrdiff_t>(5 * s),
                                   out.begin() + static_cast<std::ptrdiff_t>(5 * s + 5)),
              alone[s])
        << "sequence " << seqs[s].first;
  // Slots are reused after release.
  for (SeqId id : ids) d->release(id);
  for (SeqId id : ids) d->add_sequence(id + 100);
}

using testing::error_of;

TEST(MtpDrafter, ContractViolationsAreErrors) {
  Tiny t;
  Prompt0 p;
  auto d = t.drafter({}, 3, 1);
  const SeqId seq = 1, other = 2;
  std::vector<int32_t> one(1);
  EXPECT_NE(error_of([&] { d->propose(std::span(&seq, 1), 1, one); }).find("never added"),
            std::string::npos);
  d->add_sequence(seq);
  EXPECT_NE(error_of([&] { d->add_sequence(other); }).find("holds 1 sequences"), std::string::npos);
  EXPECT_NE(error_of([&] { d->propose(std::span(&seq, 1), 1, one); }).find("observed nothing"),
            std::string::npos);
  DraftRows gap = p.rows(seq, 4, 8);
  EXPECT_NE(error_of([&] { d->observe(std::span(&gap, 1)); }).find("holds only 0"), std::string::npos);
  DraftRows r = p.rows(seq, 0, 8);
  d->observe(std::span(&r, 1));
  std::vector<int32_t> out(4);
  EXPECT_NE(error_of([&] { d->propose(std::span(&seq, 1), 4, out); }).find("1 to 3"), std::string::npos);
  DraftRows bad{seq, 8, std::span(p.tokens).subspan(9, 2), std::span(p.post).subspan(0, 100)};
  EXPECT_NE(error_of([&] { d->observe(std::span(&bad, 1)); }).find("feature floats"), std::string::npos);
}

TEST(DrafterRegistry, BuildsMtpAndNamesWhatAnArtifactLacks) {
  Tiny t;
  const std::vector<std::string> methods = drafter_methods();  // mtp, and dflash2 once its drafter is in
  EXPECT_NE(std::find(methods.begin(), methods.end(), "mtp"), methods.end());
  EXPECT_EQ(default_draft_tokens("mtp"), 3);
  for (bool draft_head : {false, true}) {
    DrafterFactory f = make_drafter_factory("mtp", t.artifact, t.config, draft_head);
    WeightStore store(*t.backend);
    auto d = f(store, DrafterLimits{.max_sequences = 2, .max_context = 64, .draft_tokens = 3});
    EXPECT_EQ(d->max_draft_tokens(), 3);
    EXPECT_TRUE(d->features().final_hidden);
    EXPECT_NE(describe_drafter("mtp", t.artifact, t.config, draft_head).find(draft_head ? "2048 of 8192" : "8192 of 8192"),
              std::string::npos);
  }
  std::string e = error_of([&] { make_drafter_factory("eagle", t.artifact, t.config, false); });
  EXPECT_NE(e.find("unknown speculative method 'eagle'"), std::string::npos) << e;
  EXPECT_NE(e.find("mtp"), std::string::npos) << e;

  // An artifact without the mtp section, and one with it but without draft_lm_head.
  testing::TempDir dir;
  for (bool with_mtp : {false, true}) {
    const auto hf = dir.path() / (with_mtp ? "hf_mtp" : "hf");
    testing::write_hf_dir(hf, testing::tiny_qwen35_config(), testing::tiny_qwen35_tensors(testing::tiny_qwen35_config(), with_mtp));
    const std::string out = dir.file(with_mtp ? "mtp.ninfer" : "plain.ninfer");
    pack_artifact({.hf_dir = hf.string(), .output = out, .show_progress = false});
    Artifact a = Artifact::open(out);
    ModelConfig c = load_model_config(a);
    e = error_of([&] { make_drafter_factory("mtp", a, c, with_mtp); });
    EXPECT_NE(e.find(out), std::string::npos) << e;
    EXPECT_NE(e.find(with_mtp ? "draft_lm_head section" : "mtp section"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace ninfer
