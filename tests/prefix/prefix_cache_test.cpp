// The prefix cache on its own: whole-block longest-prefix matches, block references, LRU eviction of idle leaves,
// GDN snapshots (a hybrid prefix ends only where one was taken) and their pool.
#include <fstream>
#include <numeric>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/memory_plan.h"
#include "engine/runtime/prefix_cache.h"
#include "tests/support/fixture_config.h"

namespace ninfer {
namespace {

using testing::fixture_config;

std::vector<int32_t> iota_tokens(int n, int32_t first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

struct Pools {
  explicit Pools(const std::string& model, int64_t blocks = 8, int64_t snapshot_rows = 2)
      : backend(make_cpu_backend({.threads = 1})),
        config(fixture_config(model)),
        kv(*backend, config, {.block_size = 4, .num_blocks = blocks, .dtype = DType::kF32}),
        state(*backend, config, /*max_slots=*/2, /*checkpoints_per_slot=*/0, snapshot_rows) {
    std::vector<int32_t> rows;
    for (int64_t i = 0; i < snapshot_rows; ++i) rows.push_back(state.extra_row(i));
    cache = std::make_unique<PrefixCache>(kv, state, config.num_linear_attention_layers() > 0, rows);
    kv.set_reclaimer([this] { return cache->evict_one(); });
  }
  // Every float of linear-state row `row` of the first GDN layer's recurrent state set to `v`.
  void fill_state(int32_t row, float v) {
    const Tensor r = state.recurrent(0).slice0(row, row + 1);
    std::fill_n(static_cast<float*>(r.data), r.numel(), v);
  }
  // Three one-block prompts (sequences 1..3), each cached with the state filled with its index; the first is marked
  // as taken at a branch point when `first_shared`.
  std::vector<std::vector<int32_t>> insert_one_block_prompts(int32_t seq_slot, bool first_shared) {
    std::vector<std::vector<int32_t>> prompts{iota_tokens(4, 0), iota_tokens(4, 100), iota_tokens(4, 200)};
    for (size_t i = 0; i < prompts.size(); ++i) {
      const SeqId seq = static_cast<SeqId>(i + 1);
      EXPECT_TRUE(kv.reserve(seq, 4));
      fill_state(seq_slot, static_cast<float>(i));
      cache->insert(prompts[i], kv.blocks(seq), seq_slot, first_shared && i == 0);
    }
    return prompts;
  }
  float state_value(int32_t row) { return *static_cast<float*>(state.recurrent(0).slice0(row, row + 1).data); }

  std::unique_ptr<Backend> backend;
  ModelConfig config;
  KvCache kv;
  LinearStateCache state;
  std::unique_ptr<PrefixCache> cache;
};

TEST(PrefixCache, DenseMatchIsTheLongestWholeBlockPrefixWithinTheLimit) {
  Pools p("qwen3_dense");
  ASSERT_FALSE(p.cache->needs_state());
  const auto tokens = iota_tokens(10, 100);
  ASSERT_TRUE(p.kv.reserve(1, 10));  // 3 blocks
  const std::vector<int32_t> blocks = p.kv.blocks(1);
  p.cache->insert(std::span(tokens).first(8), blocks);
  EXPECT_EQ(p.kv.refs(blocks[0]), 2);
  EXPECT_EQ(p.kv.refs(blocks[1]), 2);
  EXPECT_EQ(p.kv.refs(blocks[2]), 1);  // the partial third block is not cached

  PrefixMatch m = p.cache->match(tokens, 100);
  EXPECT_EQ(m.tokens, 8);
  EXPECT_EQ(m.blocks, std::vector<int32_t>(blocks.begin(), blocks.begin() + 2));
  EXPECT_EQ(m.snapshot_row, -1);
  EXPECT_EQ(p.cache->match(tokens, 7).tokens, 4);  // the limit cuts whole blocks
  auto diverged = tokens;
  diverged[5] = 7;
  EXPECT_EQ(p.cache->match(diverged, 100).tokens, 4);
  diverged[0] = 7;
  EXPECT_EQ(p.cache->match(diverged, 100).tokens, 0);
  // The same tokens again keep the blocks already cached.
  ASSERT_TRUE(p.kv.reserve(2, 8));
  p.cache->insert(std::span(tokens).first(8), p.kv.blocks(2));
  EXPECT_EQ(p.kv.refs(p.kv.blocks(2)[0]), 1);
  EXPECT_EQ(p.cache->stats().nodes, 2);
}

TEST(PrefixCache, ReleasedBlocksStayCachedUntilTheFreeListRunsShort) {
  Pools p("qwen3_dense");
  const auto tokens = iota_tokens(8, 0);
  ASSERT_TRUE(p.kv.reserve(1, 8));
  p.cache->insert(tokens, p.kv.blocks(1));
  p.kv.release(1);
  EXPECT_EQ(p.kv.free_blocks(), 6);
  EXPECT_EQ(p.cache->idle_blocks(), 2);
  // A later sequence adopts the cached blocks; the cache's blocks are not free while it holds them.
  const PrefixMatch m = p.cache->match(tokens, 8);
  ASSERT_EQ(m.tokens, 8);
  p.kv.adopt(2, m.blocks);
  EXPECT_EQ(p.kv.refs(m.blocks[0]), 2);
  EXPECT_EQ(p.cache->idle_blocks(), 0);
  p.kv.release(2);
  // A sequence that needs the whole pool reclaims them.
  ASSERT_TRUE(p.kv.reserve(3, 32));
  EXPECT_EQ(p.kv.free_blocks(), 0);
  EXPECT_EQ(p.cache->stats().nodes, 0);
  EXPECT_EQ(p.cache->match(tokens, 8).tokens, 0);
  p.kv.release(3);
  EXPECT_EQ(p.kv.free_blocks(), 8);
}

TEST(PrefixCache, EvictionTakesTheLeastRecentlyUsedIdleLeaf) {
  Pools p("qwen3_dense");
  const auto a = iota_tokens(8, 0), b = iota_tokens(4, 50);
  ASSERT_TRUE(p.kv.reserve(1, 8));
  ASSERT_TRUE(p.kv.reserve(2, 4));
  p.cache->insert(a, p.kv.blocks(1));
  p.cache->insert(b, p.kv.blocks(2));
  const std::vector<int32_t> ablocks = p.kv.blocks(1), bblocks = p.kv.blocks(2);
  p.kv.release(1);
  p.kv.release(2);
  ASSERT_EQ(p.cache->match(a, 8).tokens, 8);  // a is now more recent than b
  ASSERT_TRUE(p.cache->evict_one());
  EXPECT_EQ(p.kv.refs(bblocks[0]), 0);
  EXPECT_EQ(p.cache->match(a, 8).tokens, 8);
  ASSERT_TRUE(p.cache->evict_one());  // a's leaf before its first block
  EXPECT_EQ(p.kv.refs(ablocks[1]), 0);
  EXPECT_EQ(p.kv.refs(ablocks[0]), 1);
  EXPECT_EQ(p.cache->match(a, 8).tokens, 4);
  ASSERT_TRUE(p.cache->evict_one());
  EXPECT_FALSE(p.cache->evict_one());
  // A block a running sequence still uses is never evicted.
  ASSERT_TRUE(p.kv.reserve(3, 4));
  p.cache->insert(std::span(a).first(4), p.kv.blocks(3));
  EXPECT_FALSE(p.cache->evict_one());
}

TEST(PrefixCache, AnIdleBlockAboveABlockInUseIsStillReclaimed) {
  Pools p("qwen3_dense");
  const auto a = iota_tokens(8, 0);
  // Sequence 1 caches a's first block; sequence 2 computed both blocks itself (it came before the cache had them),
  // so its second block hangs below sequence 1's first one.
  ASSERT_TRUE(p.kv.reserve(1, 4));
  p.cache->insert(std::span(a).first(4), p.kv.blocks(1));
  const int32_t first = p.kv.blocks(1)[0];
  p.kv.release(1);
  ASSERT_TRUE(p.kv.reserve(2, 8));
  p.cache->insert(a, p.kv.blocks(2));
  ASSERT_EQ(p.cache->stats().nodes, 2);
  EXPECT_EQ(p.kv.refs(first), 1);  // only the cache holds it, but it is not a leaf
  // Sequence 2 holds 2 blocks, the cache 1 more: a sequence that needs the other 6 reclaims the inner node.
  ASSERT_TRUE(p.kv.reserve(3, 24));
  EXPECT_EQ(p.kv.refs(first), 1);  // reused by sequence 3, no longer cached
  EXPECT_EQ(p.cache->stats().nodes, 0);
  EXPECT_EQ(p.kv.refs(p.kv.blocks(2)[1]), 1);  // sequence 2's block left the cache, not sequence 2
  EXPECT_FALSE(p.cache->evict_one());
}

TEST(PrefixCache, HybridPrefixEndsOnlyWhereASnapshotWasTaken) {
  Pools p("qwen35_untied");
  ASSERT_TRUE(p.cache->needs_state());
  const int32_t seq_slot = p.state.acquire();
  const auto tokens = iota_tokens(12, 10);
  ASSERT_TRUE(p.kv.reserve(1, 12));
  p.fill_state(seq_slot, 8.0f);
  p.cache->insert(std::span(tokens).first(8), p.kv.blocks(1), seq_slot);
  p.fill_state(seq_slot, 12.0f);
  p.cache->insert(tokens, p.kv.blocks(1), seq_slot);

  PrefixMatch m = p.cache->match(tokens, 100);
  ASSERT_EQ(m.tokens, 12);
  ASSERT_GE(m.snapshot_row, 0);
  EXPECT_EQ(p.state_value(m.snapshot_row), 12.0f);
  m = p.cache->match(tokens, 11);
  ASSERT_EQ(m.tokens, 8);
  EXPECT_EQ(p.state_value(m.snapshot_row), 8.0f);
  EXPECT_EQ(p.cache->match(tokens, 7).tokens, 0);  // the node at 4 tokens has K/V but no state
  EXPECT_THROW(p.cache->insert(tokens, p.kv.blocks(1)), Error);  // a hybrid prefix without its state
}

TEST(PrefixCache, SnapshotPoolDropsTheLeastRecentlyUsedSnapshot) {
  Pools p("qwen35_untied", /*blocks=*/8, /*snapshot_rows=*/2);
  const int32_t seq_slot = p.state.acquire();
  const auto prompts = p.insert_one_block_prompts(seq_slot, /*first_shared=*/false);
  EXPECT_EQ(p.cache->stats().snapshots, 2);
  EXPECT_EQ(p.cache->match(prompts[0], 4).tokens, 0);
  for (size_t i = 1; i < prompts.size(); ++i) {
    const PrefixMatch m = p.cache->match(prompts[i], 4);
    ASSERT_EQ(m.tokens, 4) << i;
    EXPECT_EQ(p.state_value(m.snapshot_row), static_cast<float>(i));
  }
}

TEST(PrefixCache, ASnapshotWherePromptsBranchOutlivesOneOffTails) {
  Pools p("qwen35_untied", /*blocks=*/8, /*snapshot_rows=*/2);
  const int32_t seq_slot = p.state.acquire();
  const auto prompts = p.insert_one_block_prompts(seq_slot, /*first_shared=*/true);
  EXPECT_EQ(p.cache->match(prompts[0], 4).tokens, 4);  // the oldest, but taken at a branch point
  EXPECT_EQ(p.cache->match(prompts[1], 4).tokens, 0);
  EXPECT_EQ(p.cache->match(prompts[2], 4).tokens, 4);
  // Proven snapshots never take more than half the rows: with both proven, a new one replaces the older.
  ASSERT_TRUE(p.kv.reserve(9, 4));
  const auto d = iota_tokens(4, 300);
  p.cache->insert(d, p.kv.blocks(9), seq_slot);
  EXPECT_EQ(p.cache->match(prompts[0], 4).tokens, 0);
  EXPECT_EQ(p.cache->match(prompts[2], 4).tokens, 4);
  EXPECT_EQ(p.cache->match(d, 4).tokens, 4);
}

// Random admissions (match, adopt, reserve, insert), releases and evictions on a small pool: every block's reference
// count equals the tables and cache nodes holding it, free blocks are exactly the unreferenced ones, matches stay
// within their limit, and once everything is let go the whole pool is free again.
TEST(PrefixCache, RandomTrafficKeepsReferenceCountsExact) {
  for (const char* model : {"qwen3_dense", "qwen35_untied"}) {
    Pools p(model, /*blocks=*/24, /*snapshot_rows=*/3);
    std::mt19937 rng(11);
    const std::vector<std::vector<int32_t>> stems{iota_tokens(12, 0), iota_tokens(8, 500), iota_tokens(20, 900)};
    std::vector<SeqId> live;
    SeqId next = 1;
    const int32_t seq_slot = p.state.acquire();
    auto check = [&](int step) {
      int64_t refs = 0, used = 0, held = 0;
      for (int32_t b = 0; b < 24; ++b) refs += p.kv.refs(b), used += p.kv.refs(b) > 0 ? 1 : 0;
      for (SeqId s : live) held += static_cast<int64_t>(p.kv.blocks(s).size());
      ASSERT_EQ(refs, held + p.cache->stats().nodes) << model << " step " << step;
      ASSERT_EQ(p.kv.free_blocks(), 24 - used) << model << " step " << step;
    };
    for (int step = 0; step < 400; ++step) {
      const int op = static_cast<int>(rng() % 4);
      if (op <= 1) {  // admit a prompt: a stem, maybe cut, plus a random tail
        const auto& stem = stems[rng() % stems.size()];
        std::vector<int32_t> prompt(stem.begin(), stem.begin() + static_cast<std::ptrdiff_t>(1 + rng() % stem.size()));
        for (uint32_t i = 0, n = rng() % 9; i < n; ++i) prompt.push_back(static_cast<int32_t>(2000 + rng() % 3));
        const int64_t n = static_cast<int64_t>(prompt.size());
        const PrefixMatch m = p.cache->match(prompt, n - 1);
        ASSERT_LE(m.tokens, n - 1);
        ASSERT_EQ(m.tokens % 4, 0);
        ASSERT_GE(m.kv_tokens, m.tokens);
        const SeqId s = next++;
        if (m.tokens > 0) p.kv.adopt(s, m.blocks);
        if (!p.kv.reserve(s, n)) {
          p.kv.release(s);
          check(step);
          continue;
        }
        live.push_back(s);
        const int64_t whole = n / 4 * 4;
        if (whole > 0) p.cache->insert(std::span(prompt).first(static_cast<size_t>(whole)), p.kv.blocks(s), seq_slot);
      } else if (op == 2 && !live.empty()) {
        const size_t i = rng() % live.size();
        p.kv.release(live[i]);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        p.cache->evict_one();
      }
      check(step);
    }
    for (SeqId s : live) p.kv.release(s);
    live.clear();
    while (p.cache->evict_one()) {
    }
    check(-1);
    EXPECT_EQ(p.kv.free_blocks(), 24) << model;
    EXPECT_EQ(p.cache->stats().nodes, 0) << model;
    EXPECT_EQ(p.cache->stats().snapshots, 0) << model;
  }
}

TEST(PrefixCacheMemory, ThePlanCountsSnapshotRowsAndOneBoundaryRowPerSequence) {
  const ModelConfig c = fixture_config("qwen35_untied");
  MemoryPlanInput in{.max_context = 256, .max_concurrency = 3, .kv_dtype = DType::kF32};
  const uint64_t base = plan_memory(c, in).state_bytes;
  in.prefix_state_rows = prefix_state_rows(c, EngineOptions{.max_concurrency = 3, .prefix_cache = true, .prefix_snapshots = 5});
  EXPECT_EQ(in.prefix_state_rows, 3 + 5);
  EXPECT_EQ(plan_memory(c, in).state_bytes - base, (3 + 5) * LinearStateCache::bytes_per_slot(c));
  EXPECT_GT(LinearStateCache::bytes_per_slot(c), 0u);
  // What the engine allocates for those rows is what the plan counts: the rows exist and are distinct.
  auto be = make_cpu_backend({.threads = 1});
  LinearStateCache state(*be, c, 3, 0, 3 + 5);
  EXPECT_EQ(state.recurrent(0).dim(0), 3 + 3 + 5);
  EXPECT_EQ(state.extra_row(0), 3);
  EXPECT_EQ(state.extra_row(7), 10);
}

TEST(KvCacheRefs, MisuseIsAnInternalErrorNotASilentDoubleFree) {
  Pools p("qwen3_dense");
  EXPECT_THROW(p.kv.unref(3), Error);
  EXPECT_THROW(p.kv.ref(3), Error);
  ASSERT_TRUE(p.kv.reserve(1, 4));
  EXPECT_THROW(p.kv.adopt(1, p.kv.blocks(1)), Error);  // only an empty table adopts
}

}  // namespace
}  // namespace ninfer
