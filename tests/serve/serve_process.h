// Owns running the real ninfer-serve binary from a test (tests/support/child_process.h starts it): which binary,
// and waiting for /health.
#pragma once

#include <cstdlib>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <sys/wait.h>

#include "tests/support/child_process.h"

namespace ninfer::testing {

// The build's ninfer-serve, or $NINFER_SERVE_BINARY (a bundle run on another machine, docs/gpu.md).
inline std::string serve_binary() {
  const char* env = std::getenv("NINFER_SERVE_BINARY");
  return env && *env ? std::string(env) : std::string(NINFER_BINARY_DIR) + "/apps/ninfer-serve";
}

// Starts ninfer-serve with `args` (after the binary name) and its output in `log`, with the "NAME=VALUE" entries of
// `env` added to its environment; returns the child's pid.
inline pid_t spawn_serve(const std::vector<std::string>& args, const std::string& log,
                         const std::vector<std::string>& env = {}) {
  return spawn_process(serve_binary(), args, log, env);
}

// Waits until GET /health answers 200 (false when the server exits first or 30 s pass).
inline bool wait_ready(httplib::Client& cli, pid_t pid) {
  for (int i = 0; i < 300; ++i) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) != 0) return false;
    auto h = cli.Get("/health");
    if (h && h->status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace ninfer::testing
