#include "bench/serving/serve_process.h"

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "engine/core/error.h"
#include "tests/support/child_process.h"

namespace ninfer::bench {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

MemoryReading parse_memory_reading(const std::string& text) {
  MemoryReading m;
  // GPU: "device 0: free after load 200.0 MiB, planned slack 156.0 MiB", one per device.
  static const std::regex device_re(R"(device \d+: free after load (-?[0-9.]+) MiB, planned slack (-?[0-9.]+) MiB)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), device_re); it != std::sregex_iterator(); ++it) {
    const double free_mib = std::stod((*it)[1]), slack = std::stod((*it)[2]);
    m.free_after_load_mib = std::min(m.free_after_load_mib.value_or(free_mib), free_mib);
    m.planned_slack_mib = std::min(m.planned_slack_mib.value_or(slack), slack);
  }
  if (m.free_after_load_mib) return m;
  // CPU: "memory plan: … slack 23585.6 MiB; host free after load 23622.3 MiB".
  static const std::regex host_re(R"(memory plan: .*slack (-?[0-9.]+) MiB; (?:host|device) free after load (-?[0-9.]+) MiB)");
  std::smatch s;
  if (std::regex_search(text, s, host_re)) {
    m.planned_slack_mib = std::stod(s[1]);
    m.free_after_load_mib = std::stod(s[2]);
  }
  return m;
}

std::optional<PlanShortfall> parse_plan_shortfall(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  static const std::regex missing_re(R"(\d+ bytes \((-?[0-9.]+) MiB\) missing)");
  while (std::getline(lines, line)) {
    if (line.find("memory plan does not fit") == std::string::npos) continue;
    PlanShortfall p;
    const size_t at = line.find("memory plan does not fit");
    p.message = line.substr(at);
    for (auto it = std::sregex_iterator(line.begin(), line.end(), missing_re); it != std::sregex_iterator(); ++it)
      p.missing_mib = std::max(p.missing_mib, std::stod((*it)[1]));
    return p;
  }
  return std::nullopt;
}

ServeProcess::ServeProcess(const std::string& binary, std::vector<std::string> args, const std::string& jsonl,
                           const std::string& log)
    : log_(log), port_(ninfer::testing::free_port()) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(binary, ec))
    fail(ErrorKind::kNotFound, "ninfer-serve binary {} does not exist (give --serve-binary)", binary);
  args.insert(args.end(), {"--port", std::to_string(port_), "--log-jsonl", jsonl});
  command_ = {binary};
  command_.insert(command_.end(), args.begin(), args.end());
  start_ = std::chrono::steady_clock::now();
  pid_ = ninfer::testing::spawn_process(binary, args, log);
  if (pid_ <= 0) fail(ErrorKind::kIo, "could not start {} (fork failed)", binary);
}

ServeProcess::~ServeProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool ServeProcess::wait_ready(std::chrono::seconds timeout) {
  httplib::Client cli("127.0.0.1", port_);
  cli.set_connection_timeout(1, 0);
  cli.set_read_timeout(5, 0);
  const auto deadline = start_ + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (const auto status = ninfer::testing::wait_exit(pid_, std::chrono::milliseconds(0))) {
      process_s_ = seconds_since(start_);
      pid_ = -1;
      spdlog::debug("ninfer-serve exited with status {} before it was ready", decode_status(*status));
      return false;
    }
    auto h = cli.Get("/health");
    if (h && h->status == 200) {
      load_s_ = seconds_since(start_);
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  stop(std::chrono::seconds(10));
  return false;
}

int ServeProcess::stop(std::chrono::seconds timeout) {
  if (pid_ <= 0) return 0;
  kill(pid_, SIGTERM);
  std::optional<int> status = ninfer::testing::wait_exit(pid_, timeout);
  if (!status) {
    spdlog::warn("ninfer-serve (pid {}) did not exit {} s after SIGTERM; killing it", pid_, timeout.count());
    kill(pid_, SIGKILL);
    int s = 0;
    waitpid(pid_, &s, 0);
    status = s;
  }
  process_s_ = seconds_since(start_);
  pid_ = -1;
  return decode_status(*status);
}

std::string ServeProcess::log_text() const {
  std::ifstream in(log_);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace ninfer::bench
