// Owns running another program from a test (no gtest needed, so tools can use it too): a free local port, starting a
// child with its output in a log and extra environment, waiting for its exit with a deadline, and a guard that kills
// a child the test leaves behind.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

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

// Kills the child if the test ends early (a failed ASSERT), so no process outlives the test.
struct ChildGuard {
  pid_t pid = -1;
  ~ChildGuard() {
    if (pid > 0) kill(pid, SIGKILL), waitpid(pid, nullptr, 0);
  }
};

// Starts `binary` with `args` (after the program name), its stdout and stderr in `log` (none: inherited), with the
// "NAME=VALUE" entries of `env` added to its environment; returns the child's pid.
inline pid_t spawn_process(const std::string& binary, const std::vector<std::string>& args, const std::string& log,
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
    std::string bin = binary;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

// The child's wait status once it has exited, or nothing when `timeout` passes first (the child keeps running).
inline std::optional<int> wait_exit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace ninfer::testing
