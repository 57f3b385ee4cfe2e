// The CPU backend's thread pool: every task runs once, exceptions propagate, back-to-back jobs work, a thread index
// never runs two tasks at once.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/backend/cpu/thread_pool.h"

namespace ninfer::cpu {
namespace {

TEST(ThreadPool, EveryTaskRunsExactlyOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{1000}}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> bad_thread{0};
      pool.parallel_for(n, [&](int64_t t, int th) {
        hits[static_cast<size_t>(t)].fetch_add(1);
        if (th < 0 || th >= threads) bad_thread.fetch_add(1);
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
      EXPECT_EQ(bad_thread.load(), 0);
    }
  }
}

// run(n, fn, false) keeps every task on the caller, in order; run(n, fn, true) is parallel_for.
TEST(ThreadPool, RunUnthreadedKeepsTasksOnTheCallerInOrder) {
  ThreadPool pool(3);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<int64_t> order;
  bool elsewhere = false, nonzero_index = false;
  pool.run(50, [&](int64_t t, int th) {
    order.push_back(t);
    elsewhere |= std::this_thread::get_id() != caller;
    nonzero_index |= th != 0;
  }, false);
  ASSERT_EQ(order.size(), 50u);
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
  EXPECT_FALSE(elsewhere);
  EXPECT_FALSE(nonzero_index);
  std::vector<std::atomic<int>> hits(1000);
  pool.run(1000, [&](int64_t t, int) { hits[static_cast<size_t>(t)].fetch_add(1); }, true);
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(ThreadPool, ManyBackToBackJobs) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int job = 0; job < 20000; ++job) pool.parallel_for(4, [&](int64_t t, int) { sum.fetch_add(t + 1); });
  EXPECT_EQ(sum.load(), 20000 * 10);
}

// parallel_for returns only after its last task finished, and per-thread scratch stays private (no two tasks run
// under one thread index at once), across jobs that end while a worker is still spinning, sleeping or just joining
// (jobs of 2..6 tasks, some with tasks slower than the spin).
TEST(ThreadPool, ReturnsAfterEveryTaskAndAThreadIndexRunsOneTaskAtATime) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    std::vector<std::atomic<int>> busy(static_cast<size_t>(threads));
    std::atomic<int> overlaps{0}, early_returns{0};
    std::atomic<int64_t> ran{0};
    int64_t want = 0;
    for (int job = 0; job < 3000; ++job) {
      const int64_t n = 2 + job % 5;
      want += n;
      pool.parallel_for(n, [&](int64_t t, int th) {
        if (busy[static_cast<size_t>(th)].fetch_add(1) != 0) overlaps.fetch_add(1);
        if ((job + t) % 97 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));  // outlasts the spin
        busy[static_cast<size_t>(th)].fetch_sub(1);
        ran.fetch_add(1);
      });
      if (ran.load() != want) early_returns.fetch_add(1);
    }
    EXPECT_EQ(overlaps.load(), 0) << threads;
    EXPECT_EQ(early_returns.load(), 0) << threads;
    EXPECT_EQ(ran.load(), want) << threads;
  }
}

TEST(ThreadPool, FirstExceptionIsRethrownAndThePoolStaysUsable) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(100,
                                 [&](int64_t t, int) {
                                   if (t == 17) throw std::runtime_error("task 17");
                                 }),
               std::runtime_error);
  std::atomic<int> n{0};
  pool.parallel_for(50, [&](int64_t, int) { n.fetch_add(1); });
  EXPECT_EQ(n.load(), 50);
}

}  // namespace
}  // namespace ninfer::cpu
