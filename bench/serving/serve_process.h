// Owns one ninfer-serve started by ninfer-bench: start with a free port and a JSONL log, time the load until /health
// answers 200, stop it cleanly (SIGTERM, then the exit), and read what its start log says about memory.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ninfer::bench {

// What the start log says about memory after loading: "free after load" and the plan's slack, in MiB. On a GPU
// the per-device lines (the smallest over the devices); on the CPU the host plan's line.
struct MemoryReading {
  std::optional<double> free_after_load_mib;
  std::optional<double> planned_slack_mib;
};
MemoryReading parse_memory_reading(const std::string& log_text);

// A start the memory plan refused: the shortfall (the largest over the devices) and the server's advice.
struct PlanShortfall {
  double missing_mib = 0;
  std::string message;  // the error line as logged
};
std::optional<PlanShortfall> parse_plan_shortfall(const std::string& log_text);

class ServeProcess {
 public:
  // Starts `binary` with `args` plus --port (a free one) and --log-jsonl `jsonl`, its output in `log`.
  ServeProcess(const std::string& binary, std::vector<std::string> args, const std::string& jsonl,
               const std::string& log);
  ~ServeProcess();  // kills a server still running (an error path)
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  // Polls /health until 200 (true), or the process exits or `timeout` passes (false; the process is then stopped).
  bool wait_ready(std::chrono::seconds timeout);
  // SIGTERM, then waits for the exit (SIGKILL after `timeout`); returns the exit status (128 + signal if killed).
  int stop(std::chrono::seconds timeout);

  int port() const { return port_; }
  const std::vector<std::string>& command() const { return command_; }
  double load_s() const { return load_s_; }        // start → /health 200
  double process_s() const { return process_s_; }  // start → exit
  std::string log_text() const;

 private:
  std::vector<std::string> command_;
  std::string log_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::chrono::steady_clock::time_point start_;
  double load_s_ = 0, process_s_ = 0;
};

}  // namespace ninfer::bench
