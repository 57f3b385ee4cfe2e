// Owns the memory planner's question for one configuration: the largest --max-context that starts, probed downward
// in fixed steps as the seed did, with the shortfall of every step that does not start.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/serving/run_file.h"

namespace ninfer::bench {

struct SweepStep {
  int64_t max_context = 0;
  bool started = false;
  std::optional<double> missing_mib;   // the plan's shortfall when it did not start
  std::optional<double> slack_mib;     // the planned slack when it started
  std::optional<double> free_mib;      // free after load when it started
  std::string message;                 // the refusal (or why it did not start)
};

struct SweepResult {
  std::string config;
  std::vector<std::string> probe_flags;  // the sweep's extra flags
  std::vector<SweepStep> steps;
  int64_t largest_started = 0;  // 0: none started
};

// The flags with --max-context set to `max_context` (added when absent) and a numeric --kv-capacity set to the
// same value (the seed sized the KV cache to the context).
std::vector<std::string> with_context(const std::vector<std::string>& flags, int64_t max_context);

// Starts the configuration at sweep.start, start − step, … until one start reaches /health 200 (then stops it) or
// the context drops below sweep.min. Each probe's log is raw/<config>.sweep-<context>.log under `out_dir`.
SweepResult run_sweep(const std::string& serve_binary, const ServerConfig& config, const std::string& out_dir);

}  // namespace ninfer::bench
