// Owns every figure of the report, computed from the requests' JSONL lines (and the runner's load/process times):
// overview, per-scenario decode with noise, long-context prefill, memory and truncation, speculative decoding,
// sweeps. The result is report.json; the Markdown and the plots are drawn from it alone.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/serving/bench_runner.h"
#include "bench/serving/context_sweep.h"
#include "bench/serving/run_file.h"

namespace ninfer::bench {

// The seed's rule of thumb when there are no repeats to measure the noise with: a decode difference under 3% is
// not a stable advantage.
inline constexpr double kSeedNoiseRule = 0.03;

struct ReportInput {
  const RunFile* run = nullptr;
  std::vector<size_t> prompt_chars;  // per scenario
  std::vector<ConfigRun> configs;
  std::vector<SweepResult> sweeps;
  std::string serve_binary;
  std::string started_at, finished_at;  // ISO 8601 UTC
  double wall_s = 0;
};

// Min, median, max of a non-empty list (the median of an even count is the mean of the middle two).
nlohmann::json min_median_max(std::vector<double> values);

nlohmann::json build_report(const ReportInput& input);

}  // namespace ninfer::bench
