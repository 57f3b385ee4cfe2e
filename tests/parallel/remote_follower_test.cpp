// A follower process of a multi-process group (engine/parallel/remote_follower.h) refuses a setup from rank 0 that it
// cannot follow: another backend than its own. Both ranks are threads of this test over Gloo on 127.0.0.1; rank 0
// sends only the setup, as RemoteRanks does first.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "engine/artifact/artifact.h"
#include "engine/core/error.h"
#include "engine/model/model_artifact.h"
#include "engine/parallel/gloo_group.h"
#include "engine/parallel/remote_follower.h"
#include "engine/parallel/remote_ranks.h"
#include "tests/support/child_process.h"

namespace ninfer {
namespace {

TEST(RemoteFollower, RefusesARank0OnAnotherBackend) {
  const Artifact artifact = Artifact::open(std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer");
  const ModelConfig config = load_model_config(artifact);
  const int port = testing::free_port();
  const auto options = [&](int rank) {
    return GlooGroupOptions{.rank = rank, .size = 2, .master_port = port, .join_timeout = std::chrono::seconds(20)};
  };
  std::string leader_error;
  std::thread leader([&] {
    try {
      GlooGroup group(options(0));
      // Rank 0 on the GPU (what this CPU-only test cannot run, so only its setup is sent).
      const TpSetup setup{.tp = 2, .backend = BackendSelection{.kind = BackendKind::kCuda}};
      std::vector<char> bytes = encode_setup(group_setup(setup, artifact, config));
      group.broadcast_bytes(bytes, 0, std::chrono::seconds(20));
    } catch (const std::exception& e) {
      leader_error = e.what();
    }
  });
  std::string follower_error;
  try {
    GlooGroup group(options(1));
    run_tp_follower(artifact, config, group, BackendSelection{.kind = BackendKind::kCpu, .threads = 1},
                    std::chrono::seconds(20));
  } catch (const Error& e) {
    follower_error = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
  }
  leader.join();
  EXPECT_EQ(leader_error, "");
  EXPECT_NE(follower_error.find("rank 0 runs the cuda backend but this process the cpu backend"), std::string::npos)
      << follower_error;
}

}  // namespace
}  // namespace ninfer
