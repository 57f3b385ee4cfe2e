// Owns running one server configuration: start (or reach) the server, send every scenario in order with its
// repeats, collect each request's JSONL line, stop the server, with progress lines while it runs.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/serving/run_file.h"
#include "bench/serving/serve_process.h"

namespace ninfer::bench {

struct RunnerOptions {
  std::string serve_binary;
  std::filesystem::path out_dir;            // raw/<config>.jsonl and raw/<config>.serve.log go here
  std::chrono::seconds ready_timeout{600};  // start → /health 200
  std::chrono::seconds request_timeout{7200};
  std::chrono::seconds stop_timeout{120};
};

// One request as sent and as the server logged it.
struct RequestRun {
  std::string scenario;
  int repeat = 0;              // 1-based
  int http_status = 0;
  double client_s = 0;
  std::string error;
  nlohmann::json line;         // the JSONL line (null when none came)
};

struct ConfigRun {
  std::string name;
  std::string description;
  std::vector<std::string> command;  // the server's command line (empty with a url)
  std::string url;
  std::string start_error;           // set when the server did not become ready; no requests then
  double load_s = 0;
  double process_s = 0;
  int exit_status = 0;
  MemoryReading memory;
  std::vector<RequestRun> requests;
};

// Runs `config` with `prompts` (one per scenario of `run`, in order). Never throws for a server that fails to start
// or a request that fails: those are recorded in the result.
ConfigRun run_configuration(const RunFile& run, const ServerConfig& config, const std::vector<std::string>& prompts,
                            const RunnerOptions& options, int index, int count);

}  // namespace ninfer::bench
