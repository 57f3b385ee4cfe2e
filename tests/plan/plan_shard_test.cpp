// Per-rank shard arithmetic of the memory plan: what each rank holds of each tensor, against sums written out here.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/model/weight_shard.h"
#include "engine/plan/plan_tensors.h"
#include "engine/plan/rank_shard.h"
#include "server/serve_options.h"

namespace ninfer {
namespace {

// A tiny hybrid: 4 layers (3 GDN + 1 attention), 8 query / 2 KV heads of 16, GDN 2 key / 4 value heads of 16.
ModelConfig tiny_config() {
  nlohmann::json j = {{"model_type", "qwen3_5_text"}, {"vocab_size", 100},       {"hidden_size", 64},
                      {"intermediate_size", 96},      {"num_hidden_layers", 4},  {"num_attention_heads", 8},
                      {"num_key_value_heads", 2},     {"head_dim", 16},          {"linear_num_key_heads", 2},
                      {"linear_num_value_heads", 4},  {"linear_key_head_dim", 16}, {"linear_value_head_dim", 16},
                      {"linear_conv_kernel_dim", 4},  {"tie_word_embeddings", false}};
  return ModelConfig::from_hf_json(j, "tiny");
}

struct Sums {
  uint64_t total = 0, replicated = 0;
};

Sums rank_sums(const ModelConfig& c, const std::vector<PlanTensor>& tensors, int rank, int tp) {
  const TpLayout l = tp_layout(c, rank, tp);
  Sums s;
  for (const PlanTensor& t : tensors) {
    const RankShard r = rank_shard(t, c, l, std::nullopt, std::nullopt, {.embedding_on_device = true});
    s.total += r.bytes;
    if (r.placement == ShardPlacement::kReplicated) s.replicated += r.bytes;
  }
  return s;
}

TEST(PlanShard, Bf16RanksSumToTp1PlusReplicas) {
  const ModelConfig c = tiny_config();
  const auto tensors = plan_tensors_from_config(c, PlanQuant::kBf16);
  const Sums tp1 = rank_sums(c, tensors, 0, 1);
  // TP1 by hand: embedding + lm_head 2·100·64; per layer norms 2·64, MLP 3·96·64; GDN layers in_proj_qkv
  // (2·32 + 64)·64, z 64·64, a and b 4·64 each, conv 128·4, dt_bias, A_log 4 each, norm 16, out 64·64; the attention
  // layer q 2·8·16·64 (with the gate), k, v 2·16·64 each, o 64·128, q_norm, k_norm 16 each; final norm 64. bf16: 2 B.
  const uint64_t gdn = 128 * 64 + 64 * 64 + 2 * 4 * 64 + 128 * 4 + 4 + 4 + 16 + 64 * 64;
  const uint64_t attn = 256 * 64 + 2 * 32 * 64 + 64 * 128 + 16 + 16;
  const uint64_t elements = 2 * 100 * 64 + 4 * (2 * 64 + 3 * 96 * 64) + 3 * gdn + attn + 64;
  EXPECT_EQ(tp1.total, 2 * elements);
  for (int tp : {2, 4}) {
    uint64_t sum = 0;
    for (int r = 0; r < tp; ++r) sum += rank_sums(c, tensors, r, tp).total;
    // Replicated on every rank: embedding, every norm (input/post 2·64 × 4 layers, q/k norm 2·16, GDN norm 16 × 3,
    // final 64). At TP4 the 2 KV heads (and the 2 GDN key heads) are replicated too: each rank keeps one, so k_proj and
    // v_proj (2 × 32·64 elements at TP1) count twice, and the GDN q and k channels (2 × 32 per layer × 64 inputs, and
    // their conv taps 2 × 32 × 4) count twice.
    const uint64_t norms = 100 * 64 + 4 * 2 * 64 + 2 * 16 + 3 * 16 + 64;
    uint64_t extra = (tp - 1) * norms;
    if (tp == 4) extra += (2 * 32 * 64) + 3 * (2 * 32 * 64 + 2 * 32 * 4);
    EXPECT_EQ(sum, tp1.total + 2 * extra) << "tp " << tp;
  }
}

TEST(PlanShard, Nvfp4ShardsCarryTheirOwnTrailerAndEmbeddingCanStayOnTheHost) {
  const ModelConfig c = tiny_config();
  const auto tensors = plan_tensors_from_config(c, PlanQuant::kNvfp4);
  // in_proj_a / in_proj_b stay bf16 (the packer's keep policy); every other projection is nvfp4.
  for (const PlanTensor& t : tensors) {
    if (t.name.find("in_proj_a") != std::string::npos || t.name.find("in_proj_b") != std::string::npos) {
      EXPECT_EQ(t.dtype, DType::kBF16) << t.name;
    }
    if (t.name == "model.layers.0.mlp.up_proj.weight") {
      EXPECT_EQ(t.dtype, DType::kNVFP4);
    }
    if (t.name == "lm_head.weight") {
      EXPECT_EQ(t.dtype, DType::kBF16);
    }
  }
  // up_proj [96, 64] at TP2: rows [48, 64] per rank = 48·64/2 codes + 48·64/16 scales + a 16-byte trailer.
  const PlanTensor up{"model.layers.0.mlp.up_proj.weight", "main", DType::kNVFP4, {96, 64}};
  const RankShard s = rank_shard(up, c, tp_layout(c, 1, 2), std::nullopt, std::nullopt, {});
  EXPECT_EQ(s.shape, (std::vector<int64_t>{48, 64}));
  EXPECT_EQ(s.bytes, 48u * 64 / 2 + 48 * 64 / 16 + 16);
  // down_proj [64, 96]: columns [64, 48] per rank.
  const PlanTensor down{"model.layers.0.mlp.down_proj.weight", "main", DType::kNVFP4, {64, 96}};
  EXPECT_EQ(rank_shard(down, c, tp_layout(c, 0, 2), std::nullopt, std::nullopt, {}).bytes, 64u * 48 / 2 + 64 * 48 / 16 + 16);
  const PlanTensor embed{"model.embed_tokens.weight", "main", DType::kBF16, {100, 64}};
  EXPECT_EQ(rank_shard(embed, c, tp_layout(c, 0, 2), std::nullopt, std::nullopt, {.embedding_on_device = false}).bytes, 0u);
  EXPECT_EQ(rank_shard(embed, c, tp_layout(c, 0, 2), std::nullopt, std::nullopt, {}).bytes, 100u * 64 * 2);
  const PlanTensor vision{"vision.blocks.0.attn.qkv.weight", "vision", DType::kBF16, {192, 64}};
  EXPECT_EQ(rank_shard(vision, c, tp_layout(c, 0, 1), std::nullopt, std::nullopt, {}).placement, ShardPlacement::kExcluded);
  // lm_head of 100 rows over 2 ranks: rank 1 holds [50, 100).
  const PlanTensor head{"lm_head.weight", "main", DType::kBF16, {100, 64}};
  EXPECT_EQ(rank_shard(head, c, tp_layout(c, 1, 2), std::nullopt, std::nullopt, {}).shape[0], 50);
}

TEST(PlanShard, DeviceArenaRounding) {
  EXPECT_EQ(device_alloc_bytes(1), 512u);
  EXPECT_EQ(device_alloc_bytes(1u << 20), 1u << 20);
  EXPECT_EQ(device_alloc_bytes((1u << 20) + 1), 2u << 20);
  EXPECT_EQ(device_alloc_bytes((4u << 20) + 1), 6u << 20);
}

TEST(PlanShard, ByteSizes) {
  using server::parse_byte_size;
  EXPECT_EQ(parse_byte_size("16GiB"), uint64_t{16} << 30);
  EXPECT_EQ(parse_byte_size("15.5G"), uint64_t{31} << 29);
  EXPECT_EQ(parse_byte_size("16000MiB"), uint64_t{16000} << 20);
  EXPECT_EQ(parse_byte_size("16GB"), uint64_t{16000000000});
  EXPECT_EQ(parse_byte_size("1234"), uint64_t{1234});
  EXPECT_FALSE(parse_byte_size("16 GiB"));
  EXPECT_FALSE(parse_byte_size("GiB"));
  EXPECT_FALSE(parse_byte_size("0"));
  EXPECT_FALSE(parse_byte_size("1.2.3G"));
}

TEST(PlanShard, PlanOnlyTakesTheServingTpFlags) {
  using server::parse_serve_options;
  auto plan = parse_serve_options({"ninfer-serve", "--plan-only", "--backend", "cuda", "--tp", "2", "--spec", "mtp",
                                   "--device-memory", "16GiB"},
                                  "m.ninfer");
  ASSERT_TRUE(plan.options) << plan.message;
  EXPECT_EQ(plan.options->device_memory, uint64_t{16} << 30);
  EXPECT_TRUE(parse_serve_options({"ninfer-serve", "--backend", "cuda", "--tp", "2"}, "m.ninfer").options);
  EXPECT_TRUE(parse_serve_options({"ninfer-serve", "--plan-only", "--backend", "cuda", "--nnodes", "2"}, "m").options);
  EXPECT_TRUE(parse_serve_options({"ninfer-serve", "--backend", "cuda", "--nnodes", "2"}, "m.ninfer").options);
  EXPECT_EQ(parse_serve_options({"ninfer-serve", "--plan-config", "c.json"}, "m").exit_code, 2);
  EXPECT_EQ(parse_serve_options({"ninfer-serve", "--device-memory", "lots"}, "m").exit_code, 2);
  EXPECT_EQ(parse_serve_options({"ninfer-serve", "--plan-only", "--plan-quant", "bf16"}, "m").exit_code, 2);
}

}  // namespace
}  // namespace ninfer
