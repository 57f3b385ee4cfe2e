// The seed report's setting on the real Qwen3.5-27B shape
// (tests/data/plan/qwen3.5-27b/config.json): NVFP4 with the packer's default
// keep-bf16 policy, --tp 2 over two 16 GiB devices, --prefill-chunk 2048,
// --max-concurrency 1,
// --max-context 196608 (docs/memory-plan.md).
#include <array>
#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/plan/device_plan.h"
#include "engine/plan/plan_tensors.h"

namespace ninfer {
namespace {

const std::string kDir = std::string(NINFER_TEST_DATA) + "/plan/qwen3.5-27b";

nlohmann::json read_json(const std::string &path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

DevicePlanInput seed_input(PlanSpec spec, int32_t k, DType kv,
                           PlanQuant quant = PlanQuant::kNvfp4) {
  DevicePlanInput in;
  in.config =
      ModelConfig::from_hf_json(read_json(kDir + "/config.json"), "27b");
  in.tensors = plan_tensors_from_config(in.config, quant);
  in.tp = 2;
  in.available_bytes = {uint64_t{16} << 30, uint64_t{16} << 30};
  in.max_context = 196608;
  in.max_concurrency = 1;
  in.kv_dtype = kv;
  in.prefill_chunk = 2048;
  in.spec = spec;
  in.draft_tokens = k;
  in.embedding_on_device = false; // --tp 2: the embedding stays on the host
  if (spec == PlanSpec::kDflash2) {
    in.dflash2 = dflash2_config_from_hf_json(
        read_json(kDir + "/dflash2/config.json"), in.config, "dflash2");
    for (PlanTensor &t : plan_tensors_from_dflash2(*in.dflash2))
      in.tensors.push_back(std::move(t));
  }
  return in;
}

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(Plan27b, ConfigFixtureHasTheFactSheetShape) {
  const ModelConfig c =
      ModelConfig::from_hf_json(read_json(kDir + "/config.json"), "27b");
  EXPECT_EQ(c.num_full_attention_layers(), 16);
  EXPECT_EQ(c.num_linear_attention_layers(), 48);
  EXPECT_EQ(c.linear_conv_dim(), 10240);
  EXPECT_EQ(c.mtp_num_layers, 1);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.rotary_dim, 64);
}

TEST(Plan27b, MtpK3WithInt8KvFitsAt196608) {
  const DevicePlan p =
      plan_devices_or_fail(seed_input(PlanSpec::kMtp, 3, DType::kI8));
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_TRUE(p.fits());
  // KV per rank: 16 attention layers × (K and V) × 2 of the 4 KV heads × (256
  // int8 codes + one f32 scale).
  EXPECT_EQ(p.kv_bytes_per_token, 16u * 2 * 2 * (256 + 4));
  EXPECT_FALSE(p.kv_replicated);
  // Each of the 16 layers allocates K and V (196608 · 2 · 256 B = 96 MiB each)
  // and two scale tensors (196608 · 2 · 4 B = 1.5 MiB, rounded to 2 MiB).
  EXPECT_EQ(p.ranks[0].kv, 16 * (2 * 96 * kMiB + 2 * 2 * kMiB));
  // GDN rows: 1 sequence + 3 checkpoints; per layer conv 4 × 3 × 5120 f32 (the
  // rank's 8 key + 24 value heads: 2·8·128 + 24·128 channels; 240 KiB, below 1
  // MiB: the arena's 512-byte classes, which it fills exactly) and recurrent 4
  // × 24 × 128 × 128 f32 (6 MiB, whole 2 MiB steps).
  EXPECT_EQ(p.ranks[0].state,
            48 * (4ull * 3 * 5120 * 4 + 4ull * 24 * 128 * 128 * 4));
  // The MTP layer's own f32 KV: 196608 + 3 + 3 positions in 16-token blocks, 2
  // KV heads of 256, K and V.
  EXPECT_EQ(p.ranks[0].drafter_caches,
            (196614 + 15) / 16 * 16 * 2ull * 2 * 256 * 4 + 5120 * 4);
  EXPECT_EQ(p.ranks[0].total(), p.ranks[1].total());
}

TEST(Plan27b, Bf16KvDoesNotFit) {
  DevicePlanInput in = seed_input(PlanSpec::kMtp, 3, DType::kBF16);
  EXPECT_FALSE(plan_devices(in).fits());
  try {
    plan_devices_or_fail(in);
    FAIL() << "expected the shortfall";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfMemory);
    const std::string m = e.what();
    EXPECT_NE(m.find("device 0 (rank 0): needs"), std::string::npos) << m;
    EXPECT_NE(m.find("device 1 (rank 1)"), std::string::npos) << m;
    EXPECT_NE(m.find("17179869184 bytes (16384.0 MiB) available"),
              std::string::npos)
        << m;
  }
}

TEST(Plan27b, Dflash2K7DoesNotFitAndNamesTheLargestContext) {
  DevicePlanInput in = seed_input(PlanSpec::kDflash2, 7, DType::kI8);
  EXPECT_FALSE(plan_devices(in).fits());
  const int64_t best = largest_fitting_context(in);
  ASSERT_GT(best, 0);
  EXPECT_EQ(best % 16, 0);
  EXPECT_LT(best, 196608);
  DevicePlanInput at = in;
  at.max_context = best;
  EXPECT_TRUE(plan_devices(at).fits());
  at.max_context = best + 16;
  EXPECT_FALSE(plan_devices(at).fits());
  try {
    plan_devices_or_fail(in);
    FAIL() << "expected the shortfall";
  } catch (const Error &e) {
    EXPECT_NE(
        std::string(e.what()).find("the largest --max-context that fits is " +
                                   std::to_string(best)),
        std::string::npos)
        << e.what();
  }
  // The drafter per rank: fc [5120, 5·5120] bf16 and its f32 vectors
  // (hidden_norm, mask_embedding, norm) whole; per layer half of the 32 query /
  // 8 KV heads of 128 and half of the 17408 MLP rows in bf16, its f32 norms
  // whole. Each of the 4 + 5 × 11 tensors is rounded up by the arena by less
  // than 2 MiB.
  const uint64_t layer = (2048ull * 5120 + 2 * 512ull * 5120 + 5120ull * 2048 +
                          3 * 8704ull * 5120) *
                             2 +
                         (2 * 5120 + 2 * 128) * 4;
  const uint64_t exact = 5120ull * 25600 * 2 + 3 * 5120 * 4 + 5 * layer;
  const DevicePlan p = plan_devices(in);
  EXPECT_GE(p.ranks[0].drafter_weights, exact);
  EXPECT_LT(p.ranks[0].drafter_weights, exact + 59 * 2 * kMiB);
}

TEST(Plan27b, TheMtpPlanLeavesRoomForMoreContextThanDflash2) {
  EXPECT_GT(
      largest_fitting_context(seed_input(PlanSpec::kMtp, 3, DType::kI8)),
      largest_fitting_context(seed_input(PlanSpec::kDflash2, 7, DType::kI8)));
}

// --plan-quant nvfp4-head (ninfer-pack --quant-lm-head nvfp4): each card holds
// its 124,160 × 5120 vocabulary rows of the lm_head at 4.5 bits instead of 16,
// and the room goes to the context.
TEST(Plan27b, AnNvfp4LmHeadFreesItsShareOfTheHeadForContext) {
  const DevicePlanInput plain = seed_input(PlanSpec::kDflash2, 7, DType::kI8);
  const DevicePlanInput head =
      seed_input(PlanSpec::kDflash2, 7, DType::kI8, PlanQuant::kNvfp4Head);
  const uint64_t bf16_rows = 124160ull * 5120 * 2;
  const uint64_t nvfp4_rows =
      nvfp4_layout(std::array<int64_t, 2>{124160, 5120})->total_bytes;
  const int64_t saved =
      static_cast<int64_t>(plan_devices(plain).ranks[0].weights) -
      static_cast<int64_t>(plan_devices(head).ranks[0].weights);
  EXPECT_NEAR(static_cast<double>(saved),
              static_cast<double>(bf16_rows - nvfp4_rows), 4.0 * kMiB);
  const int64_t before = largest_fitting_context(plain),
                after = largest_fitting_context(head);
  std::printf(
      "per card: %.1f MiB less; DFlash2 K=7 largest context %lld -> %lld\n",
      saved / double(kMiB), static_cast<long long>(before),
      static_cast<long long>(after));
  EXPECT_GT(after, before);
}

} // namespace
} // namespace ninfer
