// The communicators: the one-rank no-op, and the in-process group's all_reduce (rank-order sums, the same bits on
// every rank), all_gather (uneven widths), broadcast, strided rows, shape mismatches and abort.
#include <atomic>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "engine/backend/backend.h"
#include "engine/core/error.h"
#include "engine/parallel/communicator.h"

namespace ninfer {
namespace {

// Runs fn(rank) on `n` threads at once; returns each rank's error message ("" when none).
std::vector<std::string> on_ranks(int n, const std::function<void(int)>& fn) {
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

float value(int rank, int64_t i) { return 1.0f / static_cast<float>(3 + rank * 7 + i) + static_cast<float>(rank) * 1e-3f; }

TEST(Communicator, SingleRankIsANoOp) {
  auto backend = make_cpu_backend({.threads = 1});
  Communicator& c = single_rank_communicator();
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  std::vector<float> x{1, 2, 3}, y(3);
  c.all_reduce_sum(Tensor::make(x.data(), DType::kF32, {1, 3}), *backend);
  EXPECT_EQ(x, (std::vector<float>{1, 2, 3}));
  c.all_gather(Tensor::make(y.data(), DType::kF32, {1, 3}), Tensor::make(x.data(), DType::kF32, {1, 3}), *backend);
  EXPECT_EQ(y, x);
  c.broadcast(Tensor::make(x.data(), DType::kF32, {3}), 0, *backend);
  EXPECT_THROW(c.broadcast(Tensor::make(x.data(), DType::kF32, {3}), 1, *backend), Error);
}

TEST(Communicator, AllReduceSumsInRankOrderWithTheSameBitsOnEveryRank) {
  for (int n : {2, 3, 4}) {
    InProcessGroup group(n);
    constexpr int64_t R = 5, N = 37;
    std::vector<std::vector<float>> data(static_cast<size_t>(n));
    auto errors = on_ranks(n, [&](int r) {
      auto backend = make_cpu_backend({.threads = 1});
      auto& x = data[static_cast<size_t>(r)];
      for (int rep = 0; rep < 3; ++rep) {  // back-to-back collectives reuse the staging buffers
        x.resize(R * N);
        for (int64_t i = 0; i < R * N; ++i) x[static_cast<size_t>(i)] = value(r, i + rep);
        group.rank(r).all_reduce_sum(Tensor::make(x.data(), DType::kF32, {R, N}), *backend);
      }
    });
    for (const auto& e : errors) EXPECT_EQ(e, "");
    for (int64_t i = 0; i < R * N; ++i) {
      float want = value(0, i + 2);
      for (int r = 1; r < n; ++r) want += value(r, i + 2);
      for (int r = 0; r < n; ++r) ASSERT_EQ(data[static_cast<size_t>(r)][static_cast<size_t>(i)], want) << n << " ranks, rank " << r;
    }
  }
}

TEST(Communicator, AllReduceOnStridedRows) {
  InProcessGroup group(2);
  std::vector<std::vector<float>> buf(2, std::vector<float>(3 * 8, -1.0f));
  auto errors = on_ranks(2, [&](int r) {
    auto backend = make_cpu_backend({.threads = 1});
    auto& b = buf[static_cast<size_t>(r)];
    for (int row = 0; row < 3; ++row)
      for (int j = 0; j < 4; ++j) b[static_cast<size_t>(row * 8 + j)] = static_cast<float>(r * 100 + row * 10 + j);
    group.rank(r).all_reduce_sum(Tensor::strided(b.data(), DType::kF32, {3, 4}, {8, 1}), *backend);
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  for (int r = 0; r < 2; ++r)
    for (int row = 0; row < 3; ++row) {
      for (int j = 0; j < 4; ++j) EXPECT_EQ(buf[static_cast<size_t>(r)][static_cast<size_t>(row * 8 + j)], 100 + 2 * (row * 10 + j));
      for (int j = 4; j < 8; ++j) EXPECT_EQ(buf[static_cast<size_t>(r)][static_cast<size_t>(row * 8 + j)], -1.0f);  // padding untouched
    }
}

TEST(Communicator, AllGatherPlacesUnevenWidthsInRankOrder) {
  InProcessGroup group(3);
  const int64_t widths[] = {3, 2, 4}, R = 2, W = 9;
  std::vector<std::vector<float>> out(3, std::vector<float>(R * W));
  auto errors = on_ranks(3, [&](int r) {
    auto backend = make_cpu_backend({.threads = 1});
    const int64_t n = widths[r];
    std::vector<float> in(static_cast<size_t>(R * n));
    for (int64_t row = 0; row < R; ++row)
      for (int64_t j = 0; j < n; ++j) in[static_cast<size_t>(row * n + j)] = static_cast<float>(row * 1000 + r * 100 + j);
    group.rank(r).all_gather(Tensor::make(out[static_cast<size_t>(r)].data(), DType::kF32, {R, W}),
                             Tensor::make(in.data(), DType::kF32, {R, n}), *backend);
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  std::vector<float> want;
  for (int64_t row = 0; row < R; ++row)
    for (int r = 0; r < 3; ++r)
      for (int64_t j = 0; j < widths[r]; ++j) want.push_back(static_cast<float>(row * 1000 + r * 100 + j));
  for (int r = 0; r < 3; ++r) EXPECT_EQ(out[static_cast<size_t>(r)], want) << "rank " << r;
}

TEST(Communicator, BroadcastFromAnyRoot) {
  InProcessGroup group(3);
  std::vector<std::vector<float>> x(3);
  auto errors = on_ranks(3, [&](int r) {
    auto backend = make_cpu_backend({.threads = 1});
    x[static_cast<size_t>(r)] = {float(r), float(r + 10)};
    group.rank(r).broadcast(Tensor::make(x[static_cast<size_t>(r)].data(), DType::kF32, {2}), 1, *backend);
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  for (int r = 0; r < 3; ++r) EXPECT_EQ(x[static_cast<size_t>(r)], (std::vector<float>{1, 11}));
}

TEST(Communicator, MismatchedShapesAreRefusedOnEveryRank) {
  InProcessGroup group(2);
  auto errors = on_ranks(2, [&](int r) {
    auto backend = make_cpu_backend({.threads = 1});
    std::vector<float> x(static_cast<size_t>(4 + r));
    group.rank(r).all_reduce_sum(Tensor::make(x.data(), DType::kF32, {1, 4 + r}), *backend);
  });
  for (const auto& e : errors) EXPECT_NE(e.find("all_reduce_sum: rank 1 brings [1, 5] but rank 0 [1, 4]"), std::string::npos) << e;
}

TEST(Communicator, AbortWakesTheWaitingRanksAndResetReArms) {
  InProcessGroup group(3);
  auto errors = on_ranks(3, [&](int r) {
    auto backend = make_cpu_backend({.threads = 1});
    std::vector<float> x(4, 1.0f);
    if (r == 2) {  // this rank "fails" before the collective and aborts instead of joining it
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      group.abort();
      throw std::runtime_error("rank 2 failed");
    }
    group.rank(r).all_reduce_sum(Tensor::make(x.data(), DType::kF32, {1, 4}), *backend);
  });
  EXPECT_NE(errors[0].find("tensor-parallel group aborted"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("tensor-parallel group aborted"), std::string::npos) << errors[1];
  EXPECT_EQ(errors[2], "rank 2 failed");
  group.reset();
  std::vector<std::vector<float>> x(3, std::vector<float>(4, 2.0f));
  errors = on_ranks(3, [&](int r) {
    auto backend = make_cpu_backend({.threads = 1});
    group.rank(r).all_reduce_sum(Tensor::make(x[static_cast<size_t>(r)].data(), DType::kF32, {1, 4}), *backend);
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(x[1], (std::vector<float>(4, 6.0f)));
}

}  // namespace
}  // namespace ninfer
