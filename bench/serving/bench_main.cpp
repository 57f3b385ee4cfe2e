// ninfer-bench: reproduces the seed's benchmark report with one command. For each server configuration of a run file
// it starts ninfer-serve (or uses a running one), sends the scenarios in order, reads the JSONL timing lines, stops
// the server, and writes report.md, report.json and SVG plots into --out (docs/bench.md).
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "bench/serving/bench_runner.h"
#include "bench/serving/context_sweep.h"
#include "bench/serving/report_figures.h"
#include "bench/serving/report_markdown.h"
#include "bench/serving/report_plots.h"
#include "bench/serving/run_file.h"
#include "bench/serving/scenario_prompt.h"
#include "engine/core/error.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace ninfer::bench;

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string default_serve_binary() {
  const char* env = std::getenv("NINFER_SERVE_BINARY");
  return env && *env ? std::string(env) : std::string(NINFER_BINARY_DIR) + "/apps/ninfer-serve";
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) ninfer::fail(ninfer::ErrorKind::kIo, "cannot write {}", path.string());
}

void write_report(const json& report, const fs::path& out) {
  write_text(out / "report.json", report.dump(2) + "\n");
  write_text(out / "report.md", render_markdown(report));
  write_report_plots(report, out);
  spdlog::info("report: {}, {} and {} plots", (out / "report.md").string(), (out / "report.json").string(),
               report_plot_files().size());
}

}  // namespace

int main(int argc, char** argv) {
  std::string run_path, out_dir, serve_binary = default_serve_binary();
  bool quick = false, no_sweep = false, sweep_only = false, render = false;
  std::vector<std::string> only;
  int repeats = 0, ready_timeout = 600, request_timeout = 7200;
  CLI::App app{"ninfer-bench: the seed's benchmark report (overview, per-scenario decode, prefill, memory, "
               "speculative decoding, context sweep, plots) from running ninfer-serve configurations"};
  app.add_option("--run", run_path, "Run file (JSON): configurations and scenarios (docs/bench.md)");
  app.add_flag("--quick", quick, "The quick set: bench/serving/runs/quick.json (ninfer-tiny on the CPU, plain and "
                                 "--spec mtp, a few minutes at most)");
  app.add_option("--out", out_dir, "Report folder: report.md, report.json, the plots, raw/ (JSONL and server logs)")
      ->required();
  app.add_option("--serve-binary", serve_binary, "The ninfer-serve to start ($NINFER_SERVE_BINARY overrides the "
                                                 "build's)")->capture_default_str();
  app.add_option("--only", only, "Run only these configurations (names, comma-separated)")->delimiter(',');
  app.add_option("--repeats", repeats, "Repeats of every scenario (overrides the run file)")->check(CLI::Range(1, 1000));
  app.add_flag("--no-sweep", no_sweep, "Skip the --max-context sweeps of the run file");
  app.add_flag("--sweep-only", sweep_only, "Run only the sweeps, no scenarios");
  app.add_flag("--render", render, "Only redraw report.md and the plots from --out's report.json");
  app.add_option("--ready-timeout", ready_timeout, "Seconds a server may take to answer /health")->capture_default_str();
  app.add_option("--request-timeout", request_timeout, "Seconds one request may take")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    const fs::path out(out_dir);
    if (render) {
      std::ifstream in(out / "report.json");
      if (!in) ninfer::fail(ninfer::ErrorKind::kNotFound, "--render: {} cannot be opened", (out / "report.json").string());
      write_report(json::parse(in), out);
      return 0;
    }
    if (quick == !run_path.empty()) {
      spdlog::error("give exactly one of --run FILE and --quick");
      return 2;
    }
    if (quick) run_path = std::string(NINFER_SOURCE_DIR) + "/bench/serving/runs/quick.json";
    RunFile run = load_run_file(run_path);
    if (!only.empty()) {
      const std::set<std::string> keep(only.begin(), only.end());
      std::erase_if(run.configs, [&](const ServerConfig& c) { return !keep.count(c.name); });
      if (run.configs.empty()) ninfer::fail(ninfer::ErrorKind::kInvalidArgument, "--only: no configuration of {} is named so", run_path);
    }
    if (repeats > 0)
      for (Scenario& s : run.scenarios) s.repeats = repeats;
    fs::create_directories(out);
    const auto t0 = std::chrono::steady_clock::now();
    ReportInput in;
    in.run = &run;
    in.serve_binary = serve_binary;
    in.started_at = now_utc();

    std::vector<std::string> prompts;
    for (const Scenario& s : run.scenarios) {
      prompts.push_back(scenario_prompt(s));
      in.prompt_chars.push_back(prompts.back().size());
      spdlog::info("scenario {}: {} prompt characters, max_tokens {}, {} repeat(s)", s.id, prompts.back().size(),
                   s.max_tokens, s.repeats);
    }
    if (!no_sweep)
      for (const ServerConfig& c : run.configs)
        if (c.sweep) in.sweeps.push_back(run_sweep(serve_binary, c, out.string()));
    RunnerOptions ro{serve_binary, out, std::chrono::seconds(ready_timeout), std::chrono::seconds(request_timeout),
                     std::chrono::seconds(120)};
    if (!sweep_only)
      for (size_t i = 0; i < run.configs.size(); ++i)
        in.configs.push_back(run_configuration(run, run.configs[i], prompts, ro, static_cast<int>(i + 1),
                                               static_cast<int>(run.configs.size())));
    in.finished_at = now_utc();
    in.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const json report = build_report(in);
    write_report(report, out);
    bool ok = true;
    for (const ConfigRun& c : in.configs) {
      ok = ok && c.start_error.empty() && c.exit_status == 0;
      for (const RequestRun& r : c.requests) ok = ok && r.http_status == 200 && r.line.is_object();
    }
    spdlog::info("done in {:.1f} s{}", in.wall_s, ok ? "" : " (some configurations or requests failed: see the report)");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}
