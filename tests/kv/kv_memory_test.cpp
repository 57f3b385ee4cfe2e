// The int8 KV cache's allocation and its bytes in the memory plan: scales counted, the same figure allocated as planned.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/memory_plan.h"
#include "tests/support/fixture_config.h"

namespace ninfer {
namespace {

using testing::fixture_config;

TEST(KvCacheInt8, AllocatesCodesAndPerTokenHeadScales) {
  auto be = make_cpu_backend({.threads = 1});
  const ModelConfig c = fixture_config("qwen35_untied");  // 1 full-attention layer of 4, n_kv 2, head_dim 32
  ASSERT_GT(c.num_full_attention_layers(), 0);
  KvCache kv(*be, c, {.block_size = 16, .num_blocks = 5, .dtype = DType::kI8});
  for (int64_t l = 0; l < c.num_full_attention_layers(); ++l) {
    const KvLayer& layer = kv.layer(l);
    EXPECT_EQ(layer.k.dtype, DType::kI8);
    EXPECT_EQ(layer.v.dtype, DType::kI8);
    for (const Tensor* s : {&layer.k_scale, &layer.v_scale}) {
      ASSERT_NE(s->data, nullptr);
      EXPECT_EQ(s->dtype, DType::kF32);
      ASSERT_EQ(s->ndim, 3);
      EXPECT_EQ(s->dim(0), 5);
      EXPECT_EQ(s->dim(1), 16);
      EXPECT_EQ(s->dim(2), c.num_kv_heads);
    }
  }
  KvCache f(*be, c, {.block_size = 16, .num_blocks = 5, .dtype = DType::kBF16});
  EXPECT_EQ(f.layer(0).k_scale.data, nullptr);  // float caches carry no scales
  EXPECT_EQ(f.layer(0).v_scale.data, nullptr);
}

TEST(KvCacheInt8, BytesPerTokenCountTheScalesAndMatchWhatIsAllocated) {
  auto be = make_cpu_backend({.threads = 1});
  for (const char* name : {"qwen35_untied", "qwen3_dense"}) {
    const ModelConfig c = fixture_config(name);
    const uint64_t rows = static_cast<uint64_t>(c.num_full_attention_layers() * 2 * c.num_kv_heads);
    const uint64_t hd = static_cast<uint64_t>(c.head_dim);
    EXPECT_EQ(KvCache::bytes_per_token(c, DType::kF32), rows * hd * 4) << name;
    EXPECT_EQ(KvCache::bytes_per_token(c, DType::kBF16), rows * hd * 2) << name;
    EXPECT_EQ(KvCache::bytes_per_token(c, DType::kI8), rows * (hd + 4)) << name;  // codes + one f32 scale per row
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16, DType::kI8}) {
      KvCache kv(*be, c, {.block_size = 16, .num_blocks = 3, .dtype = dt});
      EXPECT_EQ(kv.allocated_bytes(), static_cast<uint64_t>(kv.capacity_tokens()) * KvCache::bytes_per_token(c, dt))
          << name << " " << dtype_name(dt);
    }
  }
}

TEST(KvCacheInt8, MemoryPlanSizesTheInt8CacheWithItsScales) {
  const ModelConfig c = fixture_config("qwen3_dense");
  MemoryPlanInput in{.weight_bytes = 1000, .max_context = 1000, .max_concurrency = 2, .kv_block_size = 16};
  in.kv_dtype = DType::kI8;
  const MemoryPlan p = plan_memory(c, in);
  EXPECT_EQ(p.kv_tokens, 2000);  // 2 × 1000, already whole blocks
  EXPECT_EQ(p.kv_bytes, 2000 * KvCache::bytes_per_token(c, DType::kI8));
  in.kv_dtype = DType::kBF16;
  const MemoryPlan pb = plan_memory(c, in);
  // an i8 row is head_dim + 4 bytes against bf16's 2 · head_dim
  const uint64_t hd = static_cast<uint64_t>(c.head_dim);
  EXPECT_EQ(p.kv_bytes * (2 * hd), pb.kv_bytes * (hd + 4));

  // The largest context the error names is computed with the scales too: a budget that holds exactly 640 i8 tokens
  // per sequence (and not 656) for two sequences.
  in.kv_dtype = DType::kI8;
  in.available_bytes = in.weight_bytes + p.state_bytes + 2 * 640 * KvCache::bytes_per_token(c, DType::kI8);
  try {
    plan_memory(c, in);
    ADD_FAILURE() << "the plan should not fit";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfMemory);
    EXPECT_NE(std::string(e.what()).find("the largest --max-context that fits is 640"), std::string::npos) << e.what();
  }
}

TEST(KvCacheInt8, UnsupportedDtypesAreRefusedByCacheAndPlan) {
  auto be = make_cpu_backend({.threads = 1});
  const ModelConfig c = fixture_config("qwen3_dense");
  EXPECT_THROW(KvCache(*be, c, {.block_size = 16, .num_blocks = 2, .dtype = DType::kNVFP4}), Error);
  EXPECT_THROW(KvCache::bytes_per_token(c, DType::kI32), Error);
  MemoryPlanInput in{.max_context = 64};
  in.kv_dtype = DType::kF8E4M3;
  EXPECT_THROW(plan_memory(c, in), Error);
}

}  // namespace
}  // namespace ninfer
