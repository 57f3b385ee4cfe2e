// Speculative decoding in the engine, greedy: token-for-token equal to plain decoding for every K, chunked and
// unchunked prefill, concurrent sequences, stops / limits / forced tokens / penalties, and the drafter contract.
#include <gtest/gtest.h>

#include "tests/spec/spec_test_util.h"
#include "tests/spec/test_drafters.h"

namespace ninfer::testing {
namespace {

enum class Kind { kRandom, kOracle, kMostlyRight };
const char* kind_name(Kind k) { return k == Kind::kRandom ? "random" : k == Kind::kOracle ? "oracle" : "mostly-right"; }

struct Spec {
  std::shared_ptr<ContractDrafter> drafter;
  EngineRun run;
};

// Runs `reqs` with a drafter of `kind` (told `truth` when it is an oracle) and K = k.
Spec run_spec(const ReferenceModel& m, EngineOptions o, const std::vector<EngineRequest>& reqs, Kind kind, int32_t k,
              const std::vector<std::vector<int32_t>>& truth, FeatureSpec features = {{1}, true}) {
  Spec s;
  std::unique_ptr<ContractDrafter> d;
  if (kind == Kind::kRandom) d = std::make_unique<RandomDrafter>(features, m.config.hidden_size, int32_t(m.config.vocab_size), 99);
  else d = std::make_unique<OracleDrafter>(features, m.config.hidden_size, int32_t(m.config.vocab_size), truth,
                                           kind == Kind::kMostlyRight ? 3 : 0);
  o.drafter = hand_over(d, s.drafter);
  o.draft_tokens = k;
  s.run = run_engine(m, o, reqs);
  return s;
}

void expect_sound(const Spec& s, const std::string& label) {
  EXPECT_EQ(s.drafter->violation, "") << label;
  EXPECT_EQ(s.run.stats.kv_blocks_used, 0) << label;
  EXPECT_EQ(s.drafter->released, static_cast<int64_t>(s.run.results.size())) << label;
  SpecStats sum;
  for (const auto& r : s.run.results) {
    sum.add(r.spec);
    EXPECT_GT(r.spec.verify_steps, 0) << label;
    EXPECT_DOUBLE_EQ(r.spec.mean_acceptance_length(),
                     1.0 + double(r.spec.accepted_tokens) / double(r.spec.verify_steps)) << label;
    // Every output token came from a verified block (accepted drafts + the target's token) or a plain step (the
    // prompt's last row, and the last token when no draft fits under the limit).
    const int64_t plain = r.completion_tokens - r.spec.verify_steps - r.spec.accepted_tokens;
    EXPECT_GE(plain, 1) << label;
    EXPECT_LE(plain, 2) << label;
  }
  EXPECT_EQ(s.run.stats.spec.verify_steps, sum.verify_steps) << label;
  EXPECT_EQ(s.run.stats.spec.drafted_tokens, sum.drafted_tokens) << label;
  EXPECT_EQ(s.run.stats.spec.accepted_tokens, sum.accepted_tokens) << label;
  EXPECT_EQ(s.run.stats.spec.accepted_at, sum.accepted_at) << label;
}

struct TinyGreedy : ::testing::Test {
  static void SetUpTestSuite() { model = std::make_unique<ReferenceModel>(ReferenceModel::Packed{kTinyArtifact}); }
  static void TearDownTestSuite() { model.reset(); }
  static std::unique_ptr<ReferenceModel> model;
  std::vector<std::vector<int32_t>> prompts() const {
    const auto V = static_cast<int32_t>(model->config.vocab_size);
    return {random_prompt(9, V, 1), random_prompt(23, V, 2), random_prompt(14, V, 3)};
  }
};
std::unique_ptr<ReferenceModel> TinyGreedy::model;

TEST_F(TinyGreedy, EqualsPlainForEveryKChunkedAndNot) {
  const auto reqs = greedy_requests(prompts(), 40);
  for (int64_t chunk : {int64_t{5}, int64_t{2048}}) {
    const EngineOptions o{.max_context = 256, .prefill_chunk = chunk, .max_concurrency = 3, .threads = 2};
    const EngineRun plain = run_engine(*model, o, reqs);
    const auto truth = truths(reqs, plain);
    for (int32_t k = 1; k <= 8; ++k)
      for (Kind kind : {Kind::kMostlyRight, Kind::kRandom, Kind::kOracle}) {
        const std::string label = fmt::format("{} K={} chunk={}", kind_name(kind), k, chunk);
        const Spec s = run_spec(*model, o, reqs, kind, k, truth);
        EXPECT_EQ(s.run.tokens, plain.tokens) << label;
        expect_sound(s, label);
        const SpecStats& t = s.run.stats.spec;
        if (kind == Kind::kOracle) {
          EXPECT_EQ(t.accepted_tokens, t.drafted_tokens) << label;
        } else if (kind == Kind::kRandom) {
          EXPECT_LT(t.acceptance_rate(), 0.02) << label;
        } else {
          EXPECT_GT(t.acceptance_rate(), 0.2) << label;
          // blocks of K + 1 ≡ 0 (mod 3) tokens can settle with the wrong position always on the target's own token
          if ((k + 1) % 3 != 0) {
            EXPECT_LT(t.acceptance_rate(), 0.9) << label;
          }
        }
        ASSERT_EQ(t.accepted_at.size(), static_cast<size_t>(k)) << label;
        for (int32_t j = 1; j < k; ++j) EXPECT_LE(t.accepted_at[j], t.accepted_at[j - 1]) << label;
      }
  }
}

// Greedy verification on the backend's argmax (EngineOptions::backend_choice: only the ids of the K + 1 rows come
// back) gives the host path's tokens and the same verdict on every draft, with the output mask ruling out the
// plain run's first token of each request.
TEST_F(TinyGreedy, BackendArgmaxVerifiesAsTheHostDoes) {
  const auto reqs = greedy_requests(prompts(), 30);
  EngineOptions o{.max_context = 256, .prefill_chunk = 7, .max_concurrency = 3, .threads = 2};
  const EngineRun plain = run_engine(*model, o, reqs);
  const auto truth = truths(reqs, plain);
  std::vector<uint8_t> allowed(static_cast<size_t>(model->config.vocab_size), 1);
  for (const auto& t : plain.tokens) allowed[static_cast<size_t>(t[0])] = 0;
  for (const bool masked : {false, true}) {
    o.output_ids = masked ? allowed : std::vector<uint8_t>{};
    for (int32_t k : {1, 3, 7})
      for (Kind kind : {Kind::kMostlyRight, Kind::kRandom}) {
        const std::string label = fmt::format("{} K={}{}", kind_name(kind), k, masked ? " masked" : "");
        o.backend_choice = true;
        const Spec on = run_spec(*model, o, reqs, kind, k, truth);
        o.backend_choice = false;
        const Spec off = run_spec(*model, o, reqs, kind, k, truth);
        EXPECT_EQ(on.run.tokens, off.run.tokens) << label;
        if (!masked) {
          EXPECT_EQ(on.run.tokens, plain.tokens) << label;
        } else {
          for (size_t r = 0; r < reqs.size(); ++r) EXPECT_NE(on.run.tokens[r][0], plain.tokens[r][0]) << label;
        }
        EXPECT_EQ(on.run.stats.spec.verify_steps, off.run.stats.spec.verify_steps) << label;
        EXPECT_EQ(on.run.stats.spec.accepted_tokens, off.run.stats.spec.accepted_tokens) << label;
        EXPECT_EQ(on.run.stats.spec.accepted_at, off.run.stats.spec.accepted_at) << label;
        EXPECT_GT(on.run.stats.argmax_rows, 0) << label;
        EXPECT_EQ(off.run.stats.argmax_rows, 0) << label;
        expect_sound(on, label);
      }
  }
}

// Requests with penalties and a logit_bias keep their rows on the backend too (Backend::edit_logits before the argmax
// or the top pairs): each verification row is edited before the step as if the drafts before it were committed. The
// same tokens and verdicts as the host editing whole rows, with drafts from the penalised run itself (so blocks are
// accepted deep) and from random ones; greedy with penalties through the argmax, greedy with a bias through one pair,
// seeded top-k draws with penalties through the pairs.
TEST_F(TinyGreedy, BackendEditsVerifyAsTheHostDoes) {
  std::vector<EngineRequest> reqs = greedy_requests(prompts(), 24);
  for (size_t r = 0; r < reqs.size(); ++r) {
    SamplingParams& s = reqs[r].sampling;
    if (r % 3 == 0) s.repetition_penalty = 1.6f, s.frequency_penalty = 0.4f;
    if (r % 3 == 1) s.presence_penalty = 0.7f, s.logit_bias = {{1, 2.0f}, {5, -100.0f}};
    if (r % 3 == 2)
      s.greedy = false, s.temperature = 0.8f, s.top_k = 8, s.seed = 40 + r, s.repetition_penalty = 0.9f,
      s.frequency_penalty = 0.3f;
  }
  EngineOptions o{.max_context = 256, .prefill_chunk = 7, .max_concurrency = 3, .threads = 2};
  o.backend_choice = false;
  const EngineRun host = run_engine(*model, o, reqs);
  const auto truth = truths(reqs, host);
  const EngineRun unpenalised = run_engine(*model, o, greedy_requests(prompts(), 24));
  EXPECT_NE(host.tokens, unpenalised.tokens);  // the processors change the output
  for (int32_t k : {1, 3})
    for (Kind kind : {Kind::kMostlyRight, Kind::kRandom}) {
      const std::string label = fmt::format("{} K={}", kind_name(kind), k);
      o.backend_choice = true;
      const Spec on = run_spec(*model, o, reqs, kind, k, truth);
      o.backend_choice = false;
      const Spec off = run_spec(*model, o, reqs, kind, k, truth);
      EXPECT_EQ(on.run.tokens, off.run.tokens) << label;
      EXPECT_EQ(on.run.stats.spec.accepted_tokens, off.run.stats.spec.accepted_tokens) << label;
      EXPECT_EQ(on.run.stats.spec.accepted_at, off.run.stats.spec.accepted_at) << label;
      EXPECT_GT(on.run.stats.top_rows, 0) << label;
      EXPECT_EQ(off.run.stats.top_rows + off.run.stats.argmax_rows, 0) << label;
      if (kind == Kind::kMostlyRight) EXPECT_GT(on.run.stats.spec.accepted_tokens, 0) << label;
    }
  o.backend_choice = true;  // greedy requests with penalties alone: argmax rows
  std::vector<EngineRequest> greedy;
  for (size_t r = 0; r < reqs.size(); r += 3) greedy.push_back(reqs[r]);
  const EngineRun alone = run_engine(*model, o, greedy);
  EXPECT_GT(alone.stats.argmax_rows, 0);
  for (size_t i = 0; i < greedy.size(); ++i) EXPECT_EQ(alone.tokens[i], host.tokens[3 * i]) << i;
}

// A request alone with a drafter equals itself in a batch, and the drafter saw every committed row once.
TEST_F(TinyGreedy, FeaturesOfCommittedRowsDoNotDependOnTheDrafts) {
  const auto reqs = greedy_requests(prompts(), 30);
  const EngineOptions o{.max_context = 256, .prefill_chunk = 7, .max_concurrency = 3, .threads = 2};
  const EngineRun plain = run_engine(*model, o, reqs);
  const auto truth = truths(reqs, plain);
  // Keep the sequences in the drafter after the end: a stop id that never comes would not help, so compare the
  // features through a drafter that copies them out on release.
  using Kept = std::map<SeqId, ContractDrafter::Seq>;
  struct Keeper : OracleDrafter {
    Keeper(Kept& kept, std::vector<std::vector<int32_t>> truth, int wrong_every, const ModelConfig& c)
        : OracleDrafter(FeatureSpec{{0, 4}, true}, c.hidden_size, int32_t(c.vocab_size), std::move(truth), wrong_every),
          kept_(kept) {}
    void release(SeqId seq) override {
      kept_[seq] = *find(seq);  // the engine (and this drafter) is gone when the test reads it
      OracleDrafter::release(seq);
    }
    Kept& kept_;
  };
  auto run_keeper = [&](int wrong_every, int32_t k) {
    Kept kept;
    auto d = std::make_unique<Keeper>(kept, truth, wrong_every, model->config);
    std::shared_ptr<Keeper> keep;
    EngineOptions oo = o;
    oo.drafter = hand_over(d, keep);
    oo.draft_tokens = k;
    EngineRun r = run_engine(*model, oo, reqs);
    EXPECT_EQ(r.tokens, plain.tokens);
    return std::pair{std::move(r), std::move(kept)};
  };
  const auto [exact_run, exact] = run_keeper(0, 5);
  const auto [noisy_run, noisy] = run_keeper(2, 3);
  ASSERT_EQ(exact.size(), reqs.size());
  ASSERT_EQ(noisy.size(), reqs.size());
  for (const auto& [id, s] : exact) {
    const auto& o2 = noisy.at(id);  // request ids are 1, 2, 3 in both engines
    // Each drafter holds the rows observed before the sequence's last step (the finishing step is not observed),
    // so the two runs hold different lengths; the rows both hold must agree.
    const int64_t rows = std::min(s.rows(), o2.rows());
    EXPECT_GE(rows, static_cast<int64_t>(reqs[static_cast<size_t>(id - 1)].prompt.size()) + 20) << "seq " << id;
    const size_t W = static_cast<size_t>(3 * model->config.hidden_size);
    EXPECT_EQ(s.features.size(), static_cast<size_t>(s.rows()) * W);  // 3 blocks of H per row
    EXPECT_EQ(std::vector<int32_t>(s.tokens.begin(), s.tokens.begin() + rows + 1),
              std::vector<int32_t>(o2.tokens.begin(), o2.tokens.begin() + rows + 1)) << "seq " << id;
    EXPECT_LE(rel_err(std::vector<float>(s.features.begin(), s.features.begin() + static_cast<std::ptrdiff_t>(rows * W)),
                      std::vector<float>(o2.features.begin(), o2.features.begin() + static_cast<std::ptrdiff_t>(rows * W))),
              1e-5) << "seq " << id;
    // the three blocks differ (layer 0, layer 4, final norm), and are not all zero
    const size_t H = static_cast<size_t>(model->config.hidden_size);
    EXPECT_NE(std::vector<float>(s.features.begin(), s.features.begin() + H),
              std::vector<float>(s.features.begin() + H, s.features.begin() + 2 * H));
    EXPECT_GT(std::abs(s.features[2 * H]) + std::abs(s.features[2 * H + 1]), 0.0f);
  }
}

class ForceAfter : public TokenController {
 public:
  explicit ForceAfter(int n) : at_(n) {}
  std::vector<int32_t> after_token(int32_t) override { return ++n_ == at_ ? std::vector<int32_t>{5, 6, 7} : std::vector<int32_t>{}; }

 private:
  int at_, n_ = 0;
};

TEST_F(TinyGreedy, StopIdsLimitsForcedTokensAndPenaltiesAsPlain) {
  const EngineOptions o{.max_context = 256, .prefill_chunk = 64, .max_concurrency = 4, .threads = 2};
  auto reqs = greedy_requests(prompts(), 40);
  const auto truth = truths(reqs, run_engine(*model, o, reqs));
  std::vector<EngineRequest> cases;
  EngineRequest stop = reqs[0];
  stop.stop_ids = {truth[0][reqs[0].prompt.size() + 12]};
  cases.push_back(stop);
  EngineRequest limit = reqs[1];
  limit.max_tokens = 7;
  cases.push_back(limit);
  EngineRequest penal = reqs[2];
  penal.sampling.repetition_penalty = 1.3f, penal.sampling.presence_penalty = 0.4f, penal.sampling.frequency_penalty = 0.2f;
  cases.push_back(penal);
  EngineRequest lp = reqs[0];
  lp.sampling.logprobs = true, lp.sampling.top_logprobs = 3;
  cases.push_back(lp);
  for (int32_t k : {2, 6}) {
    for (Kind kind : {Kind::kOracle, Kind::kMostlyRight, Kind::kRandom}) {
      const std::string label = fmt::format("{} K={}", kind_name(kind), k);
      auto with_controllers = cases;
      with_controllers[1].controller = std::make_shared<ForceAfter>(3);
      with_controllers[2].controller = std::make_shared<ForceAfter>(10);
      auto plain_cases = cases;
      plain_cases[1].controller = std::make_shared<ForceAfter>(3);
      plain_cases[2].controller = std::make_shared<ForceAfter>(10);
      const EngineRun plain = run_engine(*model, o, plain_cases);
      const Spec s = run_spec(*model, o, with_controllers, kind, k, truth);
      EXPECT_EQ(s.drafter->violation, "") << label;
      for (size_t i = 0; i < cases.size(); ++i) {
        EXPECT_EQ(s.run.tokens[i], plain.tokens[i]) << label << " case " << i;
        EXPECT_EQ(s.run.results[i].reason, plain.results[i].reason) << label << " case " << i;
      }
      EXPECT_EQ(s.run.results[0].reason, FinishReason::kEos);
      EXPECT_EQ(s.run.results[1].reason, FinishReason::kOutputLimit);
      EXPECT_EQ(s.run.tokens[1].size(), 7u);
      // logprobs of every token, and the alternatives, as plain decode reports them
      ASSERT_EQ(s.run.outputs[3].size(), plain.outputs[3].size());
      for (size_t t = 0; t < plain.outputs[3].size(); ++t) {
        const SampledToken &a = s.run.outputs[3][t].token, &b = plain.outputs[3][t].token;
        EXPECT_NEAR(a.logprob, b.logprob, 1e-4) << label << " token " << t;
        ASSERT_EQ(a.top.size(), 3u);
        for (size_t j = 0; j < 3; ++j) {
          EXPECT_EQ(a.top[j].first, b.top[j].first) << label << " token " << t;
          EXPECT_NEAR(a.top[j].second, b.top[j].second, 1e-4) << label << " token " << t;
        }
      }
      EXPECT_EQ(s.run.stats.kv_blocks_used, 0) << label;
    }
  }
}

// Reference models from transformers: a GDN hybrid (tied and untied embeddings) and a dense Qwen3.
class ReferenceGreedy : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceGreedy, EqualsPlain) {
  ReferenceModel m(GetParam());
  auto index = reference_index();
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i : {size_t{1}, size_t{2}, size_t{0}}) prompts.push_back(read_i32(index["models"][GetParam()]["prompts"][i]["tokens"]));
  const auto reqs = greedy_requests(prompts, 24);
  const EngineOptions o{.max_context = 256, .prefill_chunk = 16, .max_concurrency = 3, .threads = 2};
  const EngineRun plain = run_engine(m, o, reqs);
  const auto truth = truths(reqs, plain);
  for (int32_t k : {1, 3, 8})
    for (Kind kind : {Kind::kMostlyRight, Kind::kRandom, Kind::kOracle}) {
      const std::string label = fmt::format("{} {} K={}", GetParam(), kind_name(kind), k);
      const Spec s = run_spec(m, o, reqs, kind, k, truth, FeatureSpec{{0}, true});
      EXPECT_EQ(s.run.tokens, plain.tokens) << label;
      expect_sound(s, label);
      if (kind == Kind::kOracle) {
        EXPECT_EQ(s.run.stats.spec.accepted_tokens, s.run.stats.spec.drafted_tokens) << label;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Models, ReferenceGreedy, ::testing::Values("qwen35_tied", "qwen35_untied", "qwen3_dense"));

}  // namespace
}  // namespace ninfer::testing
