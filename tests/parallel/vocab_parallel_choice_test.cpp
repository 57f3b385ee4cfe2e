// The vocabulary-parallel greedy choice (engine/model/vocab_parallel_head.h): each rank's (maximum, index) pair from
// Backend::max_rows, reduced in rank order, gives std::max_element's answer over the whole row — ties across a rank
// boundary, NaN at the row's first column or at a rank's, a rank of NaN only, every column masked — and, through the
// in-process group of CPU ranks, the same ids as one rank scoring the whole head, with and without a mask. The
// vocabulary-parallel top-k: each rank's first pairs (Backend::top_k_rows) merged give the whole row's first pairs,
// on the same adversarial rows and through the group.
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "engine/backend/backend.h"
#include "engine/backend/scratch_buffers.h"
#include "engine/core/error.h"
#include "engine/model/vocab_parallel_head.h"
#include "engine/model/weight_shard.h"
#include "engine/parallel/communicator.h"

namespace ninfer {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Rows cut as the ranks hold them, each share reduced by max_rows (nan_first on rank 0), then reduce_argmax_pairs.
std::vector<int32_t> sharded_argmax(Backend& be, const std::vector<std::vector<float>>& rows, int size) {
  const int64_t V = static_cast<int64_t>(rows[0].size()), R = static_cast<int64_t>(rows.size());
  std::vector<float> pairs(static_cast<size_t>(R * 2 * size));
  for (int q = 0; q < size; ++q) {
    const WeightShard::Range share = tp_rows(V, q, size);
    for (int64_t r = 0; r < R; ++r) {
      std::vector<float> best(2);
      be.max_rows(Tensor::make(best.data(), DType::kF32, {1, 2}),
                  Tensor::make(const_cast<float*>(rows[static_cast<size_t>(r)].data()) + share.begin, DType::kF32,
                               {1, share.end - share.begin}),
                  q == 0);
      pairs[static_cast<size_t>(r * 2 * size + 2 * q)] = best[0];
      pairs[static_cast<size_t>(r * 2 * size + 2 * q + 1)] = best[1];
    }
  }
  std::vector<int32_t> ids(static_cast<size_t>(R), -7);
  reduce_argmax_pairs(pairs, size, V, ids);
  return ids;
}

std::vector<int32_t> whole_argmax(Backend& be, const std::vector<std::vector<float>>& rows) {
  std::vector<int32_t> ids;
  for (const auto& row : rows) {
    int32_t id = -7;
    be.argmax_rows(std::span(&id, 1), Tensor::make(const_cast<float*>(row.data()), DType::kF32,
                                                   {1, static_cast<int64_t>(row.size())}));
    ids.push_back(id);
  }
  return ids;
}

TEST(VocabParallelArgmax, RankPairsReduceToTheWholeRowsFirstMaximum) {
  auto be = make_cpu_backend({.threads = 1});
  // 12 columns: at size 2 the shares are [0, 6) [6, 12); at 3 [0, 4) [4, 8) [8, 12); at 4 three columns each.
  const std::vector<std::vector<float>> rows = {
      {1, 2, 3, 4, 5, 9, 9, 1, 1, 1, 1, 1},                 // a tie across the first boundary: the lower id
      {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9},                 // the last column
      {kNan, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},            // NaN at the row's first column: 0
      {1, 2, 3, 4, 5, 6, kNan, 7, 8, kNan, 20, 3},          // NaN at a share's first column is never chosen
      {3, kNan, kNan, kNan, kNan, kNan, kNan, kNan, kNan, kNan, kNan, kNan},  // shares of NaN only
      {kNan, kNan, kNan, kNan, kNan, kNan, kNan, kNan, kNan, kNan, kNan, kNan},
      {-kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf},  // all masked
      {-kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -5},
      {kInf, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, kInf},
      {-0.0f, -1, -1, -1, -1, -1, 0.0f, -1, -1, -1, -1, -1},  // -0 == +0 across ranks: a tie
      {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
  };
  const std::vector<int32_t> want = whole_argmax(*be, rows);
  EXPECT_EQ(want, (std::vector<int32_t>{5, 11, 0, 10, 0, 0, 0, 11, 0, 0, 0}));  // std::max_element's, by hand
  for (int size : {2, 3, 4, 12}) EXPECT_EQ(sharded_argmax(*be, rows, size), want) << "size " << size;

  std::mt19937 rng(7);
  std::uniform_int_distribution<int> coarse(-3, 3);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<std::vector<float>> random_rows(200, std::vector<float>(37));
  for (auto& row : random_rows)
    for (float& v : row) v = u(rng) < 0.05f ? kNan : static_cast<float>(coarse(rng));  // many ties, some NaN
  const std::vector<int32_t> random_want = whole_argmax(*be, random_rows);
  for (int size : {2, 3, 4, 5, 8}) EXPECT_EQ(sharded_argmax(*be, random_rows, size), random_want) << "size " << size;

  std::vector<int32_t> ids(2);
  EXPECT_THROW(reduce_argmax_pairs(std::vector<float>(6), 2, 12, ids), Error);  // 2 rows of 2 ranks need 8 floats
}

// Runs fn(rank) on `n` threads at once; rethrows the first rank's error.
void on_ranks(int n, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// Through the in-process group: every rank computes the same ids, equal to one rank's over the whole head. x and the
// head hold small integers, so every score is exact whatever the summation order and equal scores are real ties; the
// head repeats rows across rank boundaries (the lower id must win), holds a NaN row (column 0 on some runs, rank 1's
// first column at size 2 on others) and a mask rules out some of the scores' winners.
TEST(VocabParallelArgmax, RanksChooseAsOneRankDoes) {
  constexpr int64_t R = 6, H = 24, V = 101;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> u(-3, 3);
  std::vector<float> x(static_cast<size_t>(R * H));
  for (float& v : x) v = static_cast<float>(u(rng));
  for (int nan_row : {-1, 0, 51}) {
    std::vector<float> head(static_cast<size_t>(V * H));
    for (float& v : head) v = static_cast<float>(u(rng));
    for (int64_t j : {50, 51, 34, 67, 25, 26, 75, 76})  // copies of row 1 across the 2-, 3- and 4-way boundaries
      std::copy_n(head.begin() + H, H, head.begin() + j * H);
    if (nan_row >= 0) std::fill_n(head.begin() + nan_row * H, H, kNan);
    auto one = make_cpu_backend({.threads = 1});
    for (bool masked : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "NaN head row " << nan_row << (masked ? ", masked" : ""));
      std::vector<int8_t> allowed(static_cast<size_t>(V), 1);
      if (masked)
        for (int64_t j = 0; j < V; j += 2) allowed[static_cast<size_t>(j)] = 0;  // 0, 50 and 76 among them
      const Tensor mask = masked ? Tensor::make(allowed.data(), DType::kI8, {V}) : Tensor{};
      std::vector<int32_t> want(static_cast<size_t>(R), -7);
      {
        ScratchBuffers scratch(*one);
        vocab_parallel_argmax(*one, single_rank_communicator(), scratch, Tensor::make(x.data(), DType::kF32, {R, H}),
                              Tensor::make(head.data(), DType::kF32, {V, H}), V, mask, want);
      }
      for (int size : {2, 3, 4}) {
        InProcessGroup group(size);
        std::vector<std::vector<int32_t>> got(static_cast<size_t>(size), std::vector<int32_t>(R, -7));
        on_ranks(size, [&](int r) {
          auto be = make_cpu_backend({.threads = 1});
          ScratchBuffers scratch(*be);
          const WeightShard::Range share = tp_rows(V, r, size);
          ASSERT_TRUE(vocab_parallel_choice_sharded(group.rank(r), V));
          vocab_parallel_argmax(*be, group.rank(r), scratch, Tensor::make(x.data(), DType::kF32, {R, H}),
                                Tensor::make(head.data() + share.begin * H, DType::kF32, {share.end - share.begin, H}),
                                V, mask, got[static_cast<size_t>(r)]);
        });
        for (int r = 0; r < size; ++r) EXPECT_EQ(got[static_cast<size_t>(r)], want) << "size " << size << " rank " << r;
      }
    }
  }
}

// Rows cut as the ranks hold them, each share's k first pairs (top_k_rows), then merge_top_pairs.
std::vector<float> sharded_top(Backend& be, const std::vector<std::vector<float>>& rows, int size, int32_t k) {
  const int64_t V = static_cast<int64_t>(rows[0].size()), R = static_cast<int64_t>(rows.size());
  std::vector<float> pairs(static_cast<size_t>(R * size * 2 * k));
  for (int q = 0; q < size; ++q) {
    const WeightShard::Range share = tp_rows(V, q, size);
    for (int64_t r = 0; r < R; ++r)
      be.top_k_rows(Tensor::make(pairs.data() + (r * size + q) * 2 * k, DType::kF32, {1, k, 2}),
                    Tensor::make(const_cast<float*>(rows[static_cast<size_t>(r)].data()) + share.begin, DType::kF32,
                                 {1, share.end - share.begin}));
  }
  std::vector<float> top(static_cast<size_t>(R * 2 * k), -7.0f);
  merge_top_pairs(pairs, size, V, k, top);
  return top;
}

std::vector<float> whole_top(Backend& be, const std::vector<std::vector<float>>& rows, int32_t k) {
  const int64_t V = static_cast<int64_t>(rows[0].size()), R = static_cast<int64_t>(rows.size());
  std::vector<float> flat;
  for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
  std::vector<float> top(static_cast<size_t>(R * 2 * k), -7.0f);
  be.top_k_rows(Tensor::make(top.data(), DType::kF32, {R, k, 2}), Tensor::make(flat.data(), DType::kF32, {R, V}));
  return top;
}

// NaN-aware, sign-aware equality of two pair lists.
::testing::AssertionResult same_pairs(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << a.size() << " vs " << b.size() << " floats";
  for (size_t i = 0; i < a.size(); ++i)
    if (std::isnan(a[i]) != std::isnan(b[i]) || (!std::isnan(a[i]) && (a[i] != b[i] || std::signbit(a[i]) != std::signbit(b[i]))))
      return ::testing::AssertionFailure() << "float " << i << " (row pair " << i / 2 << "): " << a[i] << " vs " << b[i];
  return ::testing::AssertionSuccess();
}

TEST(VocabParallelTop, RankPairsMergeToTheWholeRowsFirstPairs) {
  auto be = make_cpu_backend({.threads = 1});
  const std::vector<std::vector<float>> rows = {
      {1, 2, 3, 4, 5, 9, 9, 1, 1, 1, 1, 1},
      {kNan, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
      {3, kNan, kNan, kNan, kNan, kNan, kNan, kNan, kNan, kNan, kNan, kNan},
      {-kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -5},
      {kInf, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, kInf},
      {-0.0f, -1, -1, -1, -1, -1, 0.0f, -1, -1, -1, -1, -1},
      {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
  };
  // By hand, k = 3: ties across rank boundaries by the lower id, NaN after every number.
  EXPECT_TRUE(same_pairs(whole_top(*be, rows, 3),
                         {9, 5, 9, 6, 5, 4,  11, 11, 10, 10, 9, 9,  3, 0, kNan, 1, kNan, 2,  -5, 11, -kInf, 0, -kInf, 1,
                          kInf, 0, kInf, 11, 1, 1,  -0.0f, 0, 0.0f, 6, -1, 1,  1, 0, 1, 1, 1, 2}));
  for (int32_t k : {1, 3, 5, 12, 20})
    for (int size : {2, 3, 4, 12})
      EXPECT_TRUE(same_pairs(sharded_top(*be, rows, size, k), whole_top(*be, rows, k))) << "k " << k << " size " << size;

  std::mt19937 rng(5);
  std::uniform_int_distribution<int> coarse(-3, 3);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<std::vector<float>> random_rows(200, std::vector<float>(37));
  for (auto& row : random_rows)
    for (float& v : row) v = u(rng) < 0.05f ? kNan : u(rng) < 0.05f ? -kInf : static_cast<float>(coarse(rng));
  for (int32_t k : {1, 7, 20, 40})
    for (int size : {2, 3, 5, 8})
      EXPECT_TRUE(same_pairs(sharded_top(*be, random_rows, size, k), whole_top(*be, random_rows, k)))
          << "k " << k << " size " << size;

  std::vector<float> top(6);
  EXPECT_THROW(merge_top_pairs(std::vector<float>(10), 2, 12, 3, top), Error);  // 1 row of 2 ranks needs 12 floats
  EXPECT_THROW(merge_top_pairs(std::vector<float>(0), 2, 12, 0, {}), Error);
}

// Through the in-process group, as RanksChooseAsOneRankDoes: every rank holds the pairs one rank scoring the whole
// head finds, with and without a mask, for k below and above a share's width.
TEST(VocabParallelTop, RanksTakeThePairsOneRankTakes) {
  constexpr int64_t R = 5, H = 24, V = 101;
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> u(-3, 3);
  std::vector<float> x(static_cast<size_t>(R * H)), head(static_cast<size_t>(V * H));
  for (float& v : x) v = static_cast<float>(u(rng));
  for (float& v : head) v = static_cast<float>(u(rng));
  for (int64_t j : {50, 51, 34, 67, 25, 26, 75, 76}) std::copy_n(head.begin() + H, H, head.begin() + j * H);
  auto one = make_cpu_backend({.threads = 1});
  for (bool masked : {false, true})
    for (int32_t k : {int32_t{1}, int32_t{20}, static_cast<int32_t>(kTopKRowsMax)}) {
      SCOPED_TRACE(::testing::Message() << "k " << k << (masked ? ", masked" : ""));
      std::vector<int8_t> allowed(static_cast<size_t>(V), 1);
      if (masked)
        for (int64_t j = 0; j < V; j += 2) allowed[static_cast<size_t>(j)] = 0;
      const Tensor mask = masked ? Tensor::make(allowed.data(), DType::kI8, {V}) : Tensor{};
      std::vector<float> want(static_cast<size_t>(R * 2 * k), -7.0f);
      {
        ScratchBuffers scratch(*one);
        vocab_parallel_top(*one, single_rank_communicator(), scratch, Tensor::make(x.data(), DType::kF32, {R, H}),
                           Tensor::make(head.data(), DType::kF32, {V, H}), V, mask, k, want);
      }
      for (int size : {2, 3, 4}) {
        InProcessGroup group(size);
        std::vector<std::vector<float>> got(static_cast<size_t>(size), std::vector<float>(want.size(), -7.0f));
        on_ranks(size, [&](int r) {
          auto be = make_cpu_backend({.threads = 1});
          ScratchBuffers scratch(*be);
          const WeightShard::Range share = tp_rows(V, r, size);
          vocab_parallel_top(*be, group.rank(r), scratch, Tensor::make(x.data(), DType::kF32, {R, H}),
                             Tensor::make(head.data() + share.begin * H, DType::kF32, {share.end - share.begin, H}), V,
                             mask, k, got[static_cast<size_t>(r)]);
        });
        for (int r = 0; r < size; ++r)
          EXPECT_TRUE(same_pairs(got[static_cast<size_t>(r)], want)) << "size " << size << " rank " << r;
      }
    }
}

TEST(VocabParallelArgmax, ShardedOnlyWithAColumnPerRank) {
  InProcessGroup group(4);
  EXPECT_FALSE(vocab_parallel_choice_sharded(single_rank_communicator(), 1000));
  EXPECT_TRUE(vocab_parallel_choice_sharded(group.rank(0), 4));
  EXPECT_FALSE(vocab_parallel_choice_sharded(group.rank(0), 3));  // a rank without a column: the scores are gathered
  EXPECT_TRUE(vocab_parallel_choice_sharded(group.rank(0), 4 * kMaxRowsColumns));
  EXPECT_FALSE(vocab_parallel_choice_sharded(group.rank(0), 4 * kMaxRowsColumns + 1));
}

}  // namespace
}  // namespace ninfer
