#include "bench/serving/context_sweep.h"

#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench/serving/serve_process.h"

namespace ninfer::bench {

std::vector<std::string> with_context(const std::vector<std::string>& flags, int64_t max_context) {
  std::vector<std::string> out = flags;
  bool has_context = false;
  for (size_t i = 0; i + 1 < out.size(); ++i) {
    if (out[i] == "--max-context") {
      out[i + 1] = std::to_string(max_context);
      has_context = true;
    } else if (out[i] == "--kv-capacity" && out[i + 1] != "auto") {
      out[i + 1] = std::to_string(max_context);
    }
  }
  if (!has_context) out.insert(out.end(), {"--max-context", std::to_string(max_context)});
  return out;
}

SweepResult run_sweep(const std::string& serve_binary, const ServerConfig& config, const std::string& out_dir) {
  SweepResult r;
  r.config = config.name;
  const SweepSpec& s = *config.sweep;
  r.probe_flags = s.flags;
  std::error_code ec;
  if (!config.model.empty() && !std::filesystem::is_regular_file(config.model, ec)) {
    SweepStep step;
    step.max_context = s.start;
    step.message = fmt::format("model {} does not exist; nothing was probed", config.model);
    spdlog::error("sweep {}: {}", config.name, step.message);
    r.steps.push_back(step);
    return r;
  }
  const std::filesystem::path raw = std::filesystem::path(out_dir) / "raw";
  std::filesystem::create_directories(raw);
  for (int64_t ctx = s.start; ctx >= s.min; ctx -= s.step) {
    std::vector<std::string> args;
    if (!config.model.empty()) args = {"--model", config.model};
    const std::vector<std::string> flags = with_context(config.flags, ctx);
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), s.flags.begin(), s.flags.end());
    const std::string stem = fmt::format("{}.sweep-{}", config.name, ctx);
    ServeProcess p(serve_binary, args, (raw / (stem + ".jsonl")).string(), (raw / (stem + ".log")).string());
    SweepStep step;
    step.max_context = ctx;
    step.started = p.wait_ready(std::chrono::seconds(600));
    const std::string log = p.log_text();
    if (step.started) {
      const MemoryReading m = parse_memory_reading(log);
      step.slack_mib = m.planned_slack_mib;
      step.free_mib = m.free_after_load_mib;
      p.stop(std::chrono::seconds(60));
    } else if (const auto shortfall = parse_plan_shortfall(log)) {
      step.missing_mib = shortfall->missing_mib;
      step.message = shortfall->message;
    } else {
      step.message = fmt::format("did not start, and the log names no memory shortfall (see {})",
                                 (raw / (stem + ".log")).string());
    }
    std::filesystem::remove(raw / (stem + ".jsonl"));
    spdlog::info("sweep {}: --max-context {}: {}", config.name, ctx,
                 step.started ? fmt::format("starts, planned slack {:.1f} MiB", step.slack_mib.value_or(0))
                 : step.missing_mib ? fmt::format("short by {:.1f} MiB", *step.missing_mib)
                                    : step.message);
    r.steps.push_back(step);
    if (step.started) {
      r.largest_started = ctx;
      break;
    }
  }
  return r;
}

}  // namespace ninfer::bench
