// Multi-process tensor parallelism through the real binary (docs/parallel.md): ninfer-serve --nnodes 2 as two
// processes on 127.0.0.1, rank 0 serving HTTP, against the same model at TP1; a follower that dies, and one that
// never comes.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/serve/serve_process.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

using testing::ChildGuard;
using testing::free_port;

struct Server {
  ChildGuard guard;
  std::string log;
};

// Starts ninfer-serve with `args`, its log in `dir`/`name`.log.
void start(Server& s, const testing::TempDir& dir, const std::string& name, const std::vector<std::string>& args) {
  s.log = dir.file(name + ".log");
  s.guard.pid = testing::spawn_serve(args, s.log);
  ASSERT_GT(s.guard.pid, 0);
}

std::vector<std::string> group_args(int node_rank, int master_port, int http_port, const std::vector<std::string>& extra) {
  std::vector<std::string> a{"--nnodes", "2", "--node-rank", std::to_string(node_rank), "--master-port",
                             std::to_string(master_port), "--threads", "1", "--max-context", "1024"};
  if (node_rank == 0) a.insert(a.end(), {"--port", std::to_string(http_port)});
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Greedy answers to three chats, the third a repeat of the first (its prompt comes from the prefix cache when on); the
// second with penalties and a logit_bias, whose edits of its rows travel to the follower with each step
// (StepMessage::edits; the follower applies those of its half of the vocabulary: without them this test fails).
std::vector<nlohmann::json> answers(int port, pid_t pid) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(120, 0);
  cli.set_connection_timeout(1, 0);
  EXPECT_TRUE(testing::wait_ready(cli, pid)) << "ninfer-serve did not become ready";
  std::vector<nlohmann::json> out;
  for (const char* text : {"Explain what a prefix cache stores, in two sentences.", "Write a haiku about ranks.",
                           "Explain what a prefix cache stores, in two sentences."}) {
    nlohmann::json body = {{"messages", {{{"role", "user"}, {"content", text}}}},
                           {"max_tokens", 48},
                           {"temperature", 0}};
    if (out.size() == 1) {  // 5507 is a token of the follower's half of the 8,192 ids at TP2
      body["frequency_penalty"] = 0.8, body["presence_penalty"] = 0.5, body["repetition_penalty"] = 1.2;
      body["logit_bias"] = {{"5507", 30}};
    }
    auto res = cli.Post("/v1/chat/completions", body.dump(), "application/json");
    if (!res || res->status != 200) {
      ADD_FAILURE() << "request failed: " << (res ? res->body : std::string("no response"));
      return out;
    }
    out.push_back(nlohmann::json::parse(res->body));
  }
  return out;
}

// The exit code of a server, or −1 (a failure is recorded) when it does not exit within `timeout`.
int exit_code(Server& s, std::chrono::seconds timeout) {
  const auto status = testing::wait_exit(s.guard.pid, timeout);
  if (!status) {
    ADD_FAILURE() << "no exit within " << timeout.count() << " s; log:\n" << testing::read_file(s.log);
    return -1;
  }
  s.guard.pid = -1;
  return WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
}

// The f32 ninfer-tiny: the default model is W4A4, whose activation scale is per row of a linear's input, so a
// row-parallel rank that sees only its share of the row computes other numbers than TP1 (docs/parallel.md).
const std::string kF32Tiny = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";

TEST(MultiProcessTp, TwoProcessesAnswerAsOneProcessDoes) {
  struct Case {
    const char* name;
    std::vector<std::string> extra;
    bool spec;
  };
  for (const Case& c : {Case{"plain", {"--model", kF32Tiny}, false},
                        Case{"int8 KV, MTP", {"--model", kF32Tiny, "--kv-dtype", "int8", "--spec", "mtp"}, true},
                        Case{"DFlash2", {"--model", kF32Tiny, "--spec", "dflash2"}, true}}) {
    SCOPED_TRACE(c.name);
    const std::vector<std::string>& extra = c.extra;
    testing::TempDir dir;
    const int http1 = free_port();
    Server tp1;
    std::vector<std::string> a1{"--port", std::to_string(http1), "--threads", "1", "--max-context", "1024"};
    a1.insert(a1.end(), extra.begin(), extra.end());
    start(tp1, dir, "tp1", a1);
    const std::vector<nlohmann::json> want = answers(http1, tp1.guard.pid);
    kill(tp1.guard.pid, SIGTERM);
    EXPECT_EQ(exit_code(tp1, std::chrono::seconds(30)), 0);

    const int master = free_port(), http = free_port();
    Server leader, follower;
    start(leader, dir, "rank0", group_args(0, master, http, extra));
    start(follower, dir, "rank1", group_args(1, master, http, extra));
    const std::vector<nlohmann::json> got = answers(http, leader.guard.pid);
    ASSERT_EQ(got.size(), want.size()) << testing::read_file(leader.log) << testing::read_file(follower.log);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i]["choices"][0]["message"], want[i]["choices"][0]["message"]) << "chat " << i;
      EXPECT_EQ(got[i]["usage"], want[i]["usage"]) << "chat " << i;
      if (c.spec) {
        // The drafter is split over the two processes: each holds half of its heads and head rows, so its drafts (and
        // what the target accepts of them) are the one-process drafter's only if both shares ran every call.
        const nlohmann::json &g = got[i]["timings"], &w = want[i]["timings"];
        ASSERT_TRUE(g.contains("draft_n")) << g.dump();
        EXPECT_GT(g["draft_n_accepted"].get<int64_t>(), 0) << "chat " << i;
        EXPECT_EQ(g["draft_n"], w["draft_n"]) << "chat " << i;
        EXPECT_EQ(g["draft_n_accepted"], w["draft_n_accepted"]) << "chat " << i;
        EXPECT_EQ(g["spec"]["accepted_per_pos"], w["spec"]["accepted_per_pos"]) << "chat " << i;
      }
    }
    if (c.spec) {
      EXPECT_NE(testing::read_file(leader.log).find("the drafter is split over the 2 ranks"), std::string::npos)
          << testing::read_file(leader.log);
      EXPECT_NE(testing::read_file(follower.log).find("built its share of the"), std::string::npos)
          << testing::read_file(follower.log);
    } else {
      EXPECT_GT(got[2]["usage"]["prompt_tokens_details"]["cached_tokens"], 0);  // prefix reuse
    }
    kill(leader.guard.pid, SIGTERM);
    EXPECT_EQ(exit_code(leader, std::chrono::seconds(30)), 0) << testing::read_file(leader.log);
    EXPECT_EQ(exit_code(follower, std::chrono::seconds(30)), 0) << testing::read_file(follower.log);  // told to stop
    EXPECT_NE(testing::read_file(follower.log).find("rank 0 said stop"), std::string::npos);
  }
}

TEST(MultiProcessTp, AFollowerThatDiesEndsTheServer) {
  testing::TempDir dir;
  const int master = free_port(), http = free_port();
  Server leader, follower;
  start(leader, dir, "rank0", group_args(0, master, http, {}));
  start(follower, dir, "rank1", group_args(1, master, http, {}));
  httplib::Client cli("127.0.0.1", http);
  cli.set_connection_timeout(1, 0);
  ASSERT_TRUE(testing::wait_ready(cli, leader.guard.pid)) << testing::read_file(leader.log);
  kill(follower.guard.pid, SIGKILL);  // while the server is idle: no request is needed to notice
  exit_code(follower, std::chrono::seconds(10));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(exit_code(leader, std::chrono::seconds(30)), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  const std::string log = testing::read_file(leader.log);
  EXPECT_NE(log.find("a follower process was lost"), std::string::npos) << log;
}

// Rank 0's forward fails after the step went out (failpoint tp.leader_forward on its third step): the followers are
// left in that step's collectives, so the request gets an error and the whole group ends.
TEST(MultiProcessTp, ARank0FailureMidStepEndsTheGroup) {
  testing::TempDir dir;
  const int master = free_port(), http = free_port();
  Server leader, follower;
  leader.log = dir.file("rank0.log");
  leader.guard.pid = testing::spawn_serve(group_args(0, master, http, {}), leader.log,
                                          {"NINFER_FAILPOINTS=tp.leader_forward:3"});
  start(follower, dir, "rank1", group_args(1, master, http, {}));
  httplib::Client cli("127.0.0.1", http);
  cli.set_connection_timeout(1, 0);
  cli.set_read_timeout(60, 0);
  ASSERT_TRUE(testing::wait_ready(cli, leader.guard.pid)) << testing::read_file(leader.log);
  const nlohmann::json body = {{"messages", {{{"role", "user"}, {"content", "Count to twenty."}}}},
                               {"max_tokens", 16},
                               {"temperature", 0}};
  auto res = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(res) << "no answer: " << testing::read_file(leader.log);
  EXPECT_GE(res->status, 500) << res->body;
  EXPECT_EQ(exit_code(leader, std::chrono::seconds(30)), 1);
  const std::string log = testing::read_file(leader.log);
  EXPECT_NE(log.find("rank 0 failed in the middle of a step"), std::string::npos) << log;
  EXPECT_EQ(exit_code(follower, std::chrono::seconds(30)), 1) << testing::read_file(follower.log);
}

TEST(MultiProcessTp, AFollowerThatNeverComesIsNamed) {
  testing::TempDir dir;
  Server leader;
  start(leader, dir, "rank0", group_args(0, free_port(), free_port(), {"--join-timeout", "2"}));
  EXPECT_EQ(exit_code(leader, std::chrono::seconds(30)), 1);
  const std::string log = testing::read_file(leader.log);
  EXPECT_NE(log.find("rank 1 has not joined within 2.0 s"), std::string::npos) << log;
}

}  // namespace
}  // namespace ninfer
