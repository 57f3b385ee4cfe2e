// Drafters split over tensor-parallel ranks against the whole drafter at TP1, on the default model: the MTP layer's
// head scores of every observed row and every draft within 1e-5 of TP1's and the same drafts (real target features
// from tests/data/mtp; full head and draft_lm_head; TP2, TP4), and the MTP and DFlash2 drafters through the engine's
// path (DrafterFactory::shard, TpRanks::sharded_drafter, RankDrafters) drafting the whole drafter's tokens.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "engine/model/model_artifact.h"
#include "engine/speculative/drafter_registry.h"
#include "engine/speculative/mtp_drafter.h"
#include "tests/model/reference_model.h"
#include "tests/parallel/tp_model.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

const std::string kTiny = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";
const std::string kData = std::string(NINFER_TEST_DATA);

template <typename T>
std::vector<T> read_raw(const std::string& path) {
  const std::string b = testing::read_file(path);
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

// Prompt 0 of the default model: tokens x_0..x_28 and the target's post-final-norm rows h_0..h_27 (tools/mtp).
struct Prompt {
  Prompt() {
    tokens = read_raw<int32_t>(kData + "/ninfer_tiny/prompt0_tokens.i32");
    tokens.push_back(read_raw<int32_t>(kData + "/ninfer_tiny/greedy0_tokens.i32").at(0));
    hidden = read_raw<float>(kData + "/mtp/prompt0_hidden_post.f32");
  }
  // Rows [begin, end) of `seq`: features h_p and next tokens x_{p+1}.
  DraftRows rows(SeqId seq, int64_t begin, int64_t end, int64_t H) const {
    return {seq, begin, std::span(tokens).subspan(static_cast<size_t>(begin + 1), static_cast<size_t>(end - begin)),
            std::span(hidden).subspan(static_cast<size_t>(begin * H), static_cast<size_t>((end - begin) * H))};
  }
  std::vector<int32_t> tokens;
  std::vector<float> hidden;
};

constexpr DrafterLimits kLimits{.max_sequences = 4, .max_context = 128, .draft_tokens = 4};

struct Scores {
  std::vector<float> observed, proposed;
  std::vector<int32_t> drafts;
};

// Two sequences observe prompt rows (one in two chunks, with a rollback), then draft 3 tokens each; `run(job)` runs
// job(rank) on every rank at once, `d(rank)` is that rank's drafter.
template <typename Run, typename Get>
Scores drive(const Prompt& p, int64_t H, int64_t V, int ranks, Run&& run, Get&& d) {
  Scores s;
  std::vector<std::vector<float>> ignored(static_cast<size_t>(ranks));
  auto observe = [&](std::vector<DraftRows> rows, int64_t total, bool keep) {
    std::vector<float> got(static_cast<size_t>(total * V));
    run([&](int r) {
      std::vector<float>& out = r == 0 ? got : ignored[static_cast<size_t>(r)];
      out.resize(got.size());
      d(r).observe(rows, out);
    });
    if (keep) s.observed.insert(s.observed.end(), got.begin(), got.end());
  };
  run([&](int r) { d(r).add_sequence(1), d(r).add_sequence(2); });
  observe({p.rows(1, 0, 20, H), p.rows(2, 0, 9, H)}, 29, true);
  observe({p.rows(1, 20, 27, H), p.rows(2, 6, 14, H)}, 15, true);  // sequence 2 rolls back to 6
  const std::vector<SeqId> seqs = {1, 2};
  constexpr int32_t k = 3;
  s.drafts.resize(seqs.size() * k);
  s.proposed.resize(s.drafts.size() * static_cast<size_t>(V));
  std::vector<std::vector<int32_t>> other(static_cast<size_t>(ranks), std::vector<int32_t>(s.drafts.size()));
  run([&](int r) {
    std::vector<float>& out = r == 0 ? s.proposed : ignored[static_cast<size_t>(r)];
    out.resize(s.proposed.size());
    d(r).propose(seqs, k, r == 0 ? std::span(s.drafts) : std::span(other[static_cast<size_t>(r)]), out);
  });
  for (int r = 1; r < ranks; ++r) EXPECT_EQ(other[static_cast<size_t>(r)], s.drafts) << "rank " << r;
  return s;
}

class TpMtpDrafter : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(TpMtpDrafter, ShareScoresAndDraftsEqualTp1) {
  const auto [tp, draft_head] = GetParam();
  const Artifact a = Artifact::open(kTiny);
  testing::TpModel m(a, tp);
  const ModelConfig& c = m.config;
  const Prompt p;
  const MtpWeights full = MtpWeights::bind(a, c, draft_head);
  const MtpOptions o{.lm_head_draft = draft_head};
  const int64_t V = full.head_rows, H = c.hidden_size;

  MtpDrafter one(c, full, *m.backend, kLimits, o);
  const Scores want = drive(p, H, V, 1, [&](auto&& job) { job(0); }, [&](int) -> MtpDrafter& { return one; });

  std::vector<std::unique_ptr<MtpDrafter>> shares(static_cast<size_t>(tp));
  m.ranks->run([&](int r) {
    Backend& backend = r == 0 ? *m.backend : m.ranks->model(r).backend();
    shares[static_cast<size_t>(r)] = std::make_unique<MtpDrafter>(
        tp_rank_config(c, tp_layout(c, r, tp)), shard_mtp_weights(full, c, r, tp), backend, kLimits, o,
        m.ranks->communicator(r));
  });
  EXPECT_EQ(shares[0]->head_rows(), V);
  EXPECT_LT(shares[1]->cache_bytes(), one.cache_bytes());  // each rank caches only its KV heads (or one replica)
  const Scores got = drive(p, H, V, tp, [&](auto&& job) { m.ranks->run(job); },
                           [&](int r) -> MtpDrafter& { return *shares[static_cast<size_t>(r)]; });
  EXPECT_LE(testing::rel_err(got.observed, want.observed), 1e-5);
  EXPECT_LE(testing::rel_err(got.proposed, want.proposed), 1e-5);
  EXPECT_EQ(got.drafts, want.drafts);
}

INSTANTIATE_TEST_SUITE_P(DefaultModel, TpMtpDrafter,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::Bool()),
                         [](const auto& info) {
                           return "Tp" + std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "DraftHead" : "FullHead");
                         });

// The engine's path for both drafters: DrafterFactory::shard through TpRanks::sharded_drafter, a RankDrafters over
// the shares, against the whole drafter over several observe / propose / rollback rounds. MTP reads the prompt's real
// target rows; DFlash2 (3 target layers' rows per position) reads seeded random rows.
class TpRankDrafters : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(TpRankDrafters, ProposeTheWholeDraftersTokens) {
  const auto [method, tp] = GetParam();
  const Artifact a = Artifact::open(kTiny);
  testing::TpModel m(a, tp);
  const Prompt p;
  const DrafterFactory f = make_drafter_factory(method, a, m.config, false);
  ASSERT_TRUE(f.shard);
  const DrafterLimits limits{.max_sequences = 2, .max_context = 64, .draft_tokens = 3};
  std::unique_ptr<Drafter> one = f(*m.weights, limits);
  std::unique_ptr<Drafter> split = m.ranks->sharded_drafter(f, *m.weights, limits);
  ASSERT_TRUE(split);
  EXPECT_LT(split->cache_bytes(), one->cache_bytes());  // rank 0 caches only its KV heads
  const int64_t H = m.config.hidden_size, W = one->features().width(H);
  std::vector<float> features = method == "mtp" ? p.hidden : std::vector<float>(static_cast<size_t>(27 * W));
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  if (method != "mtp")
    for (float& v : features) v = normal(rng);
  for (Drafter* d : {one.get(), split.get()}) d->add_sequence(7);
  for (int64_t end : {12, 20, 27}) {  // observe a chunk, draft, roll back what a verifier would have rejected
    const int64_t begin = end == 12 ? 0 : end - 8;
    const DraftRows rows{7, begin, std::span(p.tokens).subspan(static_cast<size_t>(begin + 1), static_cast<size_t>(end - begin)),
                         std::span(features).subspan(static_cast<size_t>(begin * W), static_cast<size_t>((end - begin) * W))};
    std::vector<int32_t> want(3), got(3);
    const SeqId seq = 7;
    one->observe(std::span(&rows, 1));
    one->propose(std::span(&seq, 1), 3, want);
    split->observe(std::span(&rows, 1));
    split->propose(std::span(&seq, 1), 3, got);
    EXPECT_EQ(got, want) << method << " at tp " << tp << ", after " << end << " rows";
  }
  for (Drafter* d : {one.get(), split.get()}) d->release(7);
}

INSTANTIATE_TEST_SUITE_P(DefaultModel, TpRankDrafters,
                         ::testing::Combine(::testing::Values("mtp", "dflash2"), ::testing::Values(2, 4)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "Tp" + std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace ninfer
