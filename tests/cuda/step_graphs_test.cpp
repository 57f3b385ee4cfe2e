// Op graphs on the GPU (docs/cuda-graphs.md): decode steps replayed from recorded CUDA graphs give the eager steps'
// logits bit for bit (same kernels, same device-side attention plan) while batches shrink, contexts cross block-table
// widths and workspaces grow; through the Engine, greedy and speculative (MTP, DFlash2: verification rows with state
// checkpoints and feature capture) decoding give the same tokens with graphs as without. Skipped without a GPU.
#include <algorithm>
#include <random>

#include "engine/artifact/artifact.h"
#include "engine/model/model_artifact.h"
#include "engine/speculative/drafter_registry.h"
#include "tests/cuda/cuda_test_support.h"
#include "tests/model/reference_model.h"
#include "tests/support/greedy_engine_run.h"

namespace ninfer::testing {
namespace {

const std::string kTiny = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";

std::vector<int32_t> tokens_of(int64_t vocab, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(std::min<int64_t>(vocab, 4000)) - 1);
  std::vector<int32_t> p(n);
  for (auto& t : p) t = id(rng);
  return p;
}

// Three sequences prefilled, then decoded together for 120 steps (the second passes 256 tokens at step 26: the block
// table's graph width goes 16 → 32 columns), the third leaving after 60 steps; a longer prefill at step 80 grows the
// activation scratch, which must drop and re-record every graph. The model with graphs must give the eager model's logits exactly.
TEST(CudaStepGraphs, DecodeReplaysGiveTheEagerLogits) {
  NINFER_REQUIRE_CUDA();
  for (DType kv : {DType::kF32, DType::kI8}) {
    ReferenceModel eager(ReferenceModel::Packed{kTiny}, kv, 2, BackendKind::kCuda);
    ReferenceModel graphed(ReferenceModel::Packed{kTiny}, kv, 2, BackendKind::kCuda);
    graphed.model->enable_step_graphs(true);
    ASSERT_NE(graphed.model->step_graph_stats(), nullptr) << "the CUDA backend records op graphs";
    const int64_t V = eager.config.vocab_size;

    auto both = [&](std::vector<SequenceStep> steps, const char* what, int step) {
      // The two models have their own state slots (acquired in the same order, so equal).
      auto e = eager.runner->step(steps);
      const std::vector<float> want(e.begin(), e.end());
      auto g = graphed.runner->step(steps);
      EXPECT_EQ(g.size(), want.size());
      size_t differ = 0, first = 0;
      for (size_t i = 0; i < std::min(g.size(), want.size()); ++i)
        if (g[i] != want[i] && differ++ == 0) first = i;
      EXPECT_EQ(differ, 0u) << what << " step " << step << " (kv " << dtype_name(kv) << "): first at logit " << first;
      return want;
    };
    std::vector<int32_t> slots;
    for (int i = 0; i < 3; ++i) {
      slots.push_back(eager.state->acquire());
      ASSERT_EQ(graphed.state->acquire(), slots.back());
    }
    std::vector<std::vector<int32_t>> prompt = {tokens_of(V, 200, 1), tokens_of(V, 230, 2), tokens_of(V, 7, 3)};
    std::vector<int64_t> pos(3);
    std::vector<int32_t> next(3);
    for (int s = 0; s < 3; ++s) {
      const auto l = both({{static_cast<SeqId>(s + 1), slots[static_cast<size_t>(s)], 0, prompt[static_cast<size_t>(s)],
                            false}},
                          "prefill", s);
      next[static_cast<size_t>(s)] = ReferenceModel::argmax(l);
      pos[static_cast<size_t>(s)] = static_cast<int64_t>(prompt[static_cast<size_t>(s)].size());
    }
    int active = 3;
    for (int step = 0; step < 120; ++step) {
      if (step == 60) active = 2;  // the third sequence leaves: a new shape, a new graph
      if (step == 80) {            // a longer prompt for a fourth sequence: the scratch grows, every graph is stale
        const int32_t slot = eager.state->acquire();
        ASSERT_EQ(graphed.state->acquire(), slot);
        both({{9, slot, 0, tokens_of(V, 400, 9), false}}, "long prefill", step);
      }
      std::vector<SequenceStep> steps;
      for (int s = 0; s < active; ++s)
        steps.push_back({static_cast<SeqId>(s + 1), slots[static_cast<size_t>(s)], pos[static_cast<size_t>(s)],
                         std::span(&next[static_cast<size_t>(s)], 1), false});
      const auto l = both(steps, "decode", step);
      for (int s = 0; s < active; ++s) {
        next[static_cast<size_t>(s)] = ReferenceModel::argmax(std::span(l).subspan(static_cast<size_t>(s * V), static_cast<size_t>(V)));
        ++pos[static_cast<size_t>(s)];
      }
    }
    const StepGraphStats& st = *graphed.model->step_graph_stats();
    EXPECT_EQ(st.failures, 0);
    EXPECT_GE(st.invalidations, 1) << "the long prefill grew the scratch";
    // Shapes: 3 sequences at widths 16 and 32, 2 at width 32 (twice: before and after the invalidation) → ≥ 4
    // recordings; every decode step but the first of each shape replays (117 of 120).
    EXPECT_GE(st.captures, 4);
    EXPECT_GE(st.replays, 110);
    EXPECT_EQ(eager.model->step_graph_stats(), nullptr);
  }
}

std::vector<std::vector<int32_t>> engine_tokens(const std::string& spec, bool graphs, EngineStats* stats = nullptr) {
  const Artifact a = Artifact::open(kTiny);
  const ModelConfig c = load_model_config(a);
  std::vector<std::vector<int32_t>> prompts;
  for (uint32_t i = 0; i < 4; ++i) prompts.push_back(tokens_of(c.vocab_size, 9 + 13 * i, 100 + i));
  const DrafterFactory drafter = spec.empty() ? DrafterFactory{} : make_drafter_factory(spec, a, c, false);
  GreedyRun r = run_greedy(a, c, drafter, spec.empty() ? 0 : default_draft_tokens(spec), /*prefill_chunk=*/7, prompts,
                           /*max_tokens=*/64, BackendKind::kCuda, DType::kI8, /*max_context=*/512, 1, {}, graphs);
  if (stats) *stats = r.stats;
  return r.outputs;
}

TEST(CudaStepGraphs, EngineTokensAreTheSameWithGraphs) {
  NINFER_REQUIRE_CUDA();
  for (const std::string spec : {"", "mtp", "dflash2"}) {
    const auto eager = engine_tokens(spec, false);
    EngineStats stats;
    const auto graphed = engine_tokens(spec, true, &stats);
    for (size_t i = 0; i < eager.size(); ++i)
      EXPECT_EQ(graphed[i], eager[i]) << (spec.empty() ? "plain" : spec) << ", request " << i;
    EXPECT_GT(stats.step_graphs.replays, 0) << (spec.empty() ? "plain" : spec) << ": no step ran from a graph";
    EXPECT_EQ(stats.step_graphs.failures, 0);
  }
}

}  // namespace
}  // namespace ninfer::testing
