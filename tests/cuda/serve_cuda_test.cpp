// ninfer-serve on the GPU: the real binary with --backend cuda answers chat completions with the same greedy text as
// --backend cpu, logs the CUDA backend, and --backend cuda without a GPU fails at start naming what is missing.
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

// Starts the server with `backend`, sends two greedy chat requests, returns their contents (and the log).
std::vector<std::string> serve_chat(const std::string& backend, std::string& log_text) {
  TempDir dir;
  const std::string log = dir.file("serve.log");
  const int port = free_port();
  ChildGuard guard;
  guard.pid = spawn_serve({"--model", kServedModel, "--served-model-name", "ninfer-tiny", "--port", std::to_string(port),
                           "--backend", backend, "--greedy", "--max-context", "512", "--threads", "2"},
                          log);
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(120, 0);
  if (!wait_ready(cli, guard.pid)) {
    ADD_FAILURE() << "ninfer-serve --backend " << backend << " did not become ready:\n" << read_all(log);
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
      ADD_FAILURE() << backend << ": no 200 answer: " << (res ? res->body : std::string("no response"));
      continue;
    }
    const auto j = nlohmann::json::parse(res->body);
    const auto& msg = j["choices"][0]["message"];
    auto text = [&](const char* key) { return msg.contains(key) && msg[key].is_string() ? msg[key].get<std::string>() : ""; };
    out.push_back(text("reasoning_content") + "|" + text("content"));
  }
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
