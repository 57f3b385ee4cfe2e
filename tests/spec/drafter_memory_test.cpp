// The drafters' own caches in the memory plan: drafter_cache_bytes() predicts what a built drafter allocates, and the
// plan counts it, for every context the largest-fit search tries.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/model/model_artifact.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/memory_plan.h"
#include "engine/speculative/drafter_registry.h"

namespace ninfer {
namespace {

const std::string kTiny = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";

TEST(DrafterMemory, ThePredictionIsWhatABuiltDrafterAllocates) {
  const Artifact a = Artifact::open(kTiny);
  const ModelConfig c = load_model_config(a);
  auto backend = make_cpu_backend({.threads = 1});
  WeightStore store(*backend);
  for (const std::string& method : drafter_methods()) {
    for (DrafterLimits limits : {DrafterLimits{.max_sequences = 1, .max_context = 100, .draft_tokens = 1},
                                 DrafterLimits{.max_sequences = 3, .max_context = 777, .draft_tokens = 3}}) {
      const auto drafter = make_drafter_factory(method, a, c, /*lm_head_draft=*/false)(store, limits);
      ASSERT_NE(drafter, nullptr) << method;
      EXPECT_GT(drafter->cache_bytes(), 0u) << method;
      EXPECT_EQ(drafter_cache_bytes(method, a, c, limits), drafter->cache_bytes())
          << method << " " << limits.max_sequences << " × " << limits.max_context;
    }
  }
  EXPECT_THROW(drafter_cache_bytes("eagle", a, c, {.max_sequences = 1, .max_context = 8, .draft_tokens = 1}), Error);
}

TEST(DrafterMemory, ThePlanCountsTheDrafterAndItsLargestFitDoesToo) {
  const Artifact a = Artifact::open(kTiny);
  const ModelConfig c = load_model_config(a);
  EngineOptions eo{.max_context = 4096, .max_concurrency = 2, .kv_dtype = DType::kI8, .draft_tokens = 3};
  MemoryPlanInput in{.weight_bytes = 1 << 20, .max_context = 4096, .max_concurrency = 2, .kv_dtype = DType::kI8,
                     .draft_tokens = 3};
  const MemoryPlan without = plan_memory(c, in);
  in.drafter_bytes = [&](int64_t ctx) { return drafter_cache_bytes("mtp", a, c, drafter_limits(eo, ctx)); };
  const MemoryPlan with = plan_memory(c, in);
  EXPECT_EQ(with.drafter_bytes, drafter_cache_bytes("mtp", a, c, drafter_limits(eo, 4096)));
  EXPECT_EQ(with.total_bytes(), without.total_bytes() + with.drafter_bytes);
  EXPECT_NE(with.describe().find("drafter caches"), std::string::npos) << with.describe();

  // Memory for exactly the plan without the drafter: the drafter does not fit at 4096, and the context the error
  // offers fits with the drafter counted at that context, one block more does not.
  in.available_bytes = without.total_bytes();
  try {
    plan_memory(c, in);
    FAIL() << "a plan short of the drafter's bytes fitted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    const std::string key = "the largest --max-context that fits is ";
    const size_t at = msg.find(key);
    ASSERT_NE(at, std::string::npos) << msg;
    const int64_t fit = std::stoll(msg.substr(at + key.size()));
    EXPECT_LT(fit, 4096);
    EXPECT_GT(fit, 0);
    in.max_context = fit;
    EXPECT_NO_THROW(plan_memory(c, in));
    in.max_context = fit + 16;
    EXPECT_THROW(plan_memory(c, in), Error);
  }
}

}  // namespace
}  // namespace ninfer
