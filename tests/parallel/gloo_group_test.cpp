// The multi-process tensor-parallel group over Gloo (engine/parallel/gloo_group.h): ranks are separate processes
// (tests/parallel/gloo_rank_main.cpp) on 127.0.0.1 that meet through rank 0's rendezvous store.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/child_process.h"
#include "tests/support/test_files.h"

namespace ninfer::testing {
namespace {

using std::chrono::milliseconds;

struct Rank {
  ChildGuard guard;
  std::string log;
};

// Starts rank `rank` of `size` with `scenario`; its output goes to a log in `dir`.
void start(Rank& r, const std::string& dir, int rank, int size, int port, const std::string& scenario, int join_ms,
           int op_ms = 60000) {
  r.log = dir + "/rank" + std::to_string(rank) + ".log";
  r.guard.pid = spawn_process(NINFER_GLOO_RANK_BINARY,
                              {std::to_string(rank), std::to_string(size), std::to_string(port), scenario,
                               std::to_string(join_ms), std::to_string(op_ms)},
                              r.log);
  ASSERT_GT(r.guard.pid, 0);
}

// The rank's exit code, failing the test when it does not exit within `timeout` or dies of a signal.
int exit_code(Rank& r, milliseconds timeout) {
  const auto status = wait_exit(r.guard.pid, timeout);
  if (!status) {
    ADD_FAILURE() << "rank did not exit within " << timeout.count() << " ms; log:\n" << read_file(r.log);
    return -1;
  }
  r.guard.pid = -1;
  if (!WIFEXITED(*status)) {
    ADD_FAILURE() << "rank ended by a signal; log:\n" << read_file(r.log);
    return -1;
  }
  return WEXITSTATUS(*status);
}

class GlooGroupTest : public ::testing::TestWithParam<int> {};

TEST_P(GlooGroupTest, EveryCollectiveAcrossProcesses) {
  const int n = GetParam();
  TempDir dir;
  const int port = free_port();
  std::vector<Rank> ranks(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) start(ranks[size_t(r)], dir.path().string(), r, n, port, "collectives", 20000);
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(exit_code(ranks[size_t(r)], milliseconds(60000)), 0) << "rank " << r << ":\n" << read_file(ranks[size_t(r)].log);
}

INSTANTIATE_TEST_SUITE_P(Ranks, GlooGroupTest, ::testing::Values(2, 3, 4));

TEST(GlooGroup, AMissingRankIsNamedWithinTheJoinTimeout) {
  TempDir dir;
  Rank leader;
  start(leader, dir.path().string(), 0, 2, free_port(), "collectives", 1500);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(exit_code(leader, milliseconds(15000)), 2);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  const std::string log = read_file(leader.log);
  EXPECT_NE(log.find("rank 1 has not joined within 1.5 s"), std::string::npos) << log;
}

TEST(GlooGroup, AnUnreachableMasterIsNamed) {
  TempDir dir;
  const int port = free_port();
  Rank follower;
  start(follower, dir.path().string(), 1, 2, port, "collectives", 1000);
  EXPECT_EQ(exit_code(follower, milliseconds(15000)), 2);
  const std::string log = read_file(follower.log);
  EXPECT_NE(log.find("could not reach rank 0's store at 127.0.0.1:" + std::to_string(port) + " within 1.0 s"),
            std::string::npos)
      << log;
}

TEST(GlooGroup, APeerThatDiesEndsTheCollectiveWithAnError) {
  TempDir dir;
  const int port = free_port();
  Rank leader, follower;
  start(leader, dir.path().string(), 0, 2, port, "reduce", 20000, 600000);  // the collective timeout is not what ends it
  start(follower, dir.path().string(), 1, 2, port, "vanish", 20000);
  EXPECT_EQ(exit_code(follower, milliseconds(30000)), 0) << read_file(follower.log);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(exit_code(leader, milliseconds(30000)), 3);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  const std::string log = read_file(leader.log);
  EXPECT_NE(log.find("tensor-parallel peer lost during all_reduce_sum on rank 0"), std::string::npos) << log;
}

}  // namespace
}  // namespace ninfer::testing
