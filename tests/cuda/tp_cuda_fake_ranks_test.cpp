// "Fake ranks on one device": the sharded forward at TP2 (and TP4 where the heads replicate) with every rank a CUDA
// backend on GPU 0 (TpRanks, as the engine builds them), ranks as threads of an InProcessGroup (which copies the
// device tensors through each rank's backend), against TP1 on CUDA: every logit of a chunked prefill and of 12 greedy decode steps. Skipped without a
// GPU, like the op suite.
//
// Tolerance (expect_cuda_tp_equals_tp1, tests/cuda/tp_cuda_model.cpp): the e2e tests' max|a − b| / max|b| <= 2e-3 per
// step, with identical greedy tokens. Only the summation order differs from TP1 (each rank's share of a row-parallel
// dot, the CUDA kernels' reductions over a shorter K, the all-reduce of the partial sums), so the error is expected
// far below that.
#include <gtest/gtest.h>

#include <random>

#include "tests/cuda/cuda_test_support.h"
#include "tests/cuda/tp_cuda_model.h"
#include "tests/model/reference_model.h"

namespace ninfer::testing {
namespace {

const std::string kTiny = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";

// Every rank on GPU 0: TpRanks gives ranks that share a device an InProcessGroup.
void expect_fake_ranks_equal_tp1(const Artifact& artifact, int tp, const std::vector<int32_t>& prompt) {
  expect_cuda_tp_equals_tp1(artifact, std::vector<int>(static_cast<size_t>(tp), 0), prompt);
}

std::vector<int32_t> random_prompt(size_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(vocab) - 1);
  std::vector<int32_t> p(n);
  for (auto& t : p) t = id(rng);
  return p;
}

struct Case {
  std::string model;
  int tp;
};

class CudaTpFakeRanks : public ::testing::TestWithParam<Case> {};

TEST_P(CudaTpFakeRanks, LogitsAndGreedyEqualTp1) {
  NINFER_REQUIRE_CUDA();
  const Case c = GetParam();
  ReferenceModel ref(c.model);  // packs the fixture (its own CPU model is not used)
  expect_fake_ranks_equal_tp1(*ref.artifact, c.tp,
                              read_i32(reference_index()["models"][c.model]["prompts"][3]["tokens"]));
}

INSTANTIATE_TEST_SUITE_P(Reference, CudaTpFakeRanks,
                         ::testing::Values(Case{"qwen35_tied", 2},    // attention and GDN heads split
                                           Case{"qwen35_tied", 4},    // KV and GDN key heads replicated
                                           Case{"qwen35_untied", 2},  // untied lm_head
                                           Case{"qwen3_dense", 2}),   // dense, 1 KV head replicated
                         [](const auto& info) { return info.param.model + "_tp" + std::to_string(info.param.tp); });

TEST(CudaTpFakeRanksTiny, NinferTinyTp2EqualsTp1) {
  NINFER_REQUIRE_CUDA();
  const Artifact a = Artifact::open(kTiny);
  expect_fake_ranks_equal_tp1(a, 2, random_prompt(150, 8192, 7));
}

}  // namespace
}  // namespace ninfer::testing
