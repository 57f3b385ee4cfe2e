// Owns running the real ninfer-serve binary from a test: a free port, the child process, waiting for /health.
#pragma once

#include <cstdlib>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ninfer::testing {

// A port that was free a moment ago (bound to 0 and closed again).
inline int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// Kills the server if the test ends early (a failed ASSERT), so no process outlives the test.
struct ChildGuard {
  pid_t pid = -1;
  ~ChildGuard() {
    if (pid > 0) kill(pid, SIGKILL), waitpid(pid, nullptr, 0);
  }
};

// The build's ninfer-serve, or $NINFER_SERVE_BINARY (a bundle run on another machine, docs/gpu.md).
inline std::string serve_binary() {
  const char* env = std::getenv("NINFER_SERVE_BINARY");
  return env && *env ? std::string(env) : std::string(NINFER_BINARY_DIR) + "/apps/ninfer-serve";
}

// Starts ninfer-serve with `args` (after the binary name) and its output in `log`, with the "NAME=VALUE" entries of
// `env` added to its environment; returns the child's pid.
inline pid_t spawn_serve(const std::vector<std::string>& args, const std::string& log,
                         const std::vector<std::string>& env = {}) {
  pid_t pid = fork();
  if (pid == 0) {
    for (const std::string& e : env) {
      const size_t eq = e.find('=');
      if (eq == std::string::npos || setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1) != 0) _exit(125);
    }
    if (!log.empty() && !freopen(log.c_str(), "w", stderr)) _exit(126);
    if (!log.empty()) dup2(fileno(stderr), fileno(stdout));
    std::vector<char*> argv;
    std::string bin = serve_binary();
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return pid;
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
