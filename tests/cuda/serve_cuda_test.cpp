// ninfer-serve on the GPU: the real binary with --backend cuda answers chat completions with the same greedy text as
// --backend cpu, logs the CUDA backend; two processes of one --nnodes group on the GPU answer as one; and --backend
// cuda without a GPU fails at start naming what is missing.
#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/cuda/cuda_test_support.h"
#include "tests/serve/serve_process.h"
#include "tests/support/test_files.h"

namespace ninfer::testing {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The f32 ninfer-tiny artifact, which the other CUDA end-to-end tests read too: the GPU check carries only the test
// data those tests need (scripts/gpu-travel.sh), and the NVFP4 default model is not among it. The NVFP4 linears are
// checked on the GPU by the op suite and by the ModelOpt checkpoint of the e2e tests.
const std::string kServedModel = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";

// The two greedy chat answers of the server on `port` (reasoning|content each); failures are recorded.
std::vector<std::string> chat_answers(int port, pid_t pid, const std::string& log) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(120, 0);
  if (!wait_ready(cli, pid)) {
    ADD_FAILURE() << "ninfer-serve did not become ready:\n" << read_all(log);
    return {};
  }
  std::vector<std::string> out;
  for (const char* prompt : {"Write a function that reverses a string.", "What is a linked list?"}) {
    nlohmann::json body = {{"model", "ninfer-tiny"},
                           {"messages", {{{"role", "user"}, {"content", prompt}}}},
                           {"max_tokens", 48},
                           {"temperature", 0}};
    auto res = cli.Post("/v1/chat/completions", body.dump(), "application/json");
    if (!res || res->status != 200) {
      ADD_FAILURE() << "no 200 answer: " << (res ? res->body : std::string("no response"));
      continue;
    }
    const auto j = nlohmann::json::parse(res->body);
    const auto& msg = j["choices"][0]["message"];
    auto text = [&](const char* key) { return msg.contains(key) && msg[key].is_string() ? msg[key].get<std::string>() : ""; };
    out.push_back(text("reasoning_content") + "|" + text("content"));
  }
  return out;
}

std::vector<std::string> serve_args(const std::string& backend) {
  return {"--model", kServedModel, "--served-model-name", "ninfer-tiny", "--backend", backend, "--greedy",
          "--max-context", "512", "--threads", "2"};
}

// Starts the server with `backend`, sends two greedy chat requests, returns their contents (and the log).
std::vector<std::string> serve_chat(const std::string& backend, std::string& log_text) {
  TempDir dir;
  const std::string log = dir.file("serve.log");
  const int port = free_port();
  ChildGuard guard;
  std::vector<std::string> args = serve_args(backend);
  args.insert(args.end(), {"--port", std::to_string(port)});
  guard.pid = spawn_serve(args, log);
  std::vector<std::string> out = chat_answers(port, guard.pid, log);
  log_text = read_all(log);
  return out;
}

TEST(CudaServe, ChatGreedyMatchesCpuAndLogsTheDevice) {
  NINFER_REQUIRE_CUDA();
  std::string cpu_log, gpu_log;
  const auto cpu = serve_chat("cpu", cpu_log);
  const auto dev = serve_chat("cuda", gpu_log);
  ASSERT_EQ(dev.size(), 2u) << gpu_log;
  EXPECT_EQ(dev, cpu);
  EXPECT_NE(gpu_log.find("backend: cuda("), std::string::npos) << gpu_log;
  EXPECT_NE(gpu_log.find("compute capability"), std::string::npos) << gpu_log;
  EXPECT_NE(gpu_log.find("weights uploaded to the device"), std::string::npos) << gpu_log;
}

// Multi-process tensor parallelism on the CUDA backend (docs/parallel.md): two ninfer-serve processes, --nnodes 2,
// both on this GPU (one process per rank; the collectives go through host memory over Gloo, so two ranks may share a
// device, which NCCL refuses), answer as one CUDA process does; rank 0's SIGTERM stops both.
TEST(CudaServe, TwoProcessesOnOneGpuAnswerAsOneProcessDoes) {
  NINFER_REQUIRE_CUDA();
  std::string tp1_log;
  const auto want = serve_chat("cuda", tp1_log);
  ASSERT_EQ(want.size(), 2u) << tp1_log;
  TempDir dir;
  const int master = free_port(), http = free_port();
  const auto group_args = [&](int rank) {
    std::vector<std::string> a = serve_args("cuda");
    a.insert(a.end(), {"--devices", "0", "--nnodes", "2", "--node-rank", std::to_string(rank), "--master-port",
                       std::to_string(master)});
    if (rank == 0) a.insert(a.end(), {"--port", std::to_string(http)});
    return a;
  };
  const std::string log0 = dir.file("rank0.log"), log1 = dir.file("rank1.log");
  ChildGuard leader, follower;
  leader.pid = spawn_serve(group_args(0), log0);
  follower.pid = spawn_serve(group_args(1), log1);
  const auto got = chat_answers(http, leader.pid, log0);
  EXPECT_EQ(got, want) << read_all(log0) << read_all(log1);
  const std::string text0 = read_all(log0), text1 = read_all(log1);
  EXPECT_NE(text0.find("2 CUDA ranks, one per process"), std::string::npos) << text0;
  EXPECT_NE(text1.find("backend: cuda("), std::string::npos) << text1;
  EXPECT_NE(text1.find("ready, following rank 0"), std::string::npos) << text1;
  kill(leader.pid, SIGTERM);
  for (ChildGuard* g : {&leader, &follower}) {
    const auto status = wait_exit(g->pid, std::chrono::seconds(30));
    ASSERT_TRUE(status) << "no exit within 30 s\n" << read_all(log0) << read_all(log1);
    g->pid = -1;
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << read_all(log0) << read_all(log1);
  }
}

// Runs everywhere: without a GPU (or without a CUDA build) --backend cuda must stop at start, saying why.
TEST(CudaServe, BackendCudaWithoutAGpuFailsAtStart) {
  if (cuda_under_test().backend) GTEST_SKIP() << "this machine has a GPU; the refusal needs one without";
  TempDir dir;
  const std::string log = dir.file("serve.log");
  ChildGuard guard;
  guard.pid = spawn_serve({"--port", std::to_string(free_port()), "--backend", "cuda"}, log);
  int status = 0;
  ASSERT_EQ(waitpid(guard.pid, &status, 0), guard.pid);
  guard.pid = -1;
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  const std::string text = read_all(log);
  EXPECT_TRUE(text.find("no CUDA backend") != std::string::npos || text.find("is not available") != std::string::npos)
      << text;
}

}  // namespace
}  // namespace ninfer::testing
