#include "bench/serving/report_plots.h"

#include <cmath>
#include <fstream>
#include <limits>

#include "bench/serving/svg_chart.h"
#include "engine/core/error.h"

namespace ninfer::bench {

using json = nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string decode_chart(const json& report) {
  std::vector<std::string> categories;
  for (const json& s : report["per_scenario"]) categories.push_back(s["scenario"].get<std::string>());
  std::vector<ChartSeries> series;
  for (const json& c : report["configurations"]) {
    ChartSeries s{c["name"].get<std::string>(), {}, {}, {}, {}};
    for (const json& row : report["per_scenario"]) {
      const json& m = row["by_config"].value(s.name, json());
      s.y.push_back(m.is_object() ? m["median"].get<double>() : kNaN);
      s.lo.push_back(m.is_object() ? m["min"].get<double>() : kNaN);
      s.hi.push_back(m.is_object() ? m["max"].get<double>() : kNaN);
    }
    series.push_back(std::move(s));
  }
  return svg_bar_chart("Decode tok/s per scenario (median; whiskers: min-max over repeats)", categories, series,
                       {"decode tok/s = (completion - 1) / decode_s", false});
}

std::string points_chart(const json& report, const char* key, const std::string& title, const ChartAxis& y) {
  std::vector<ChartSeries> series;
  for (const json& c : report["configurations"]) {
    ChartSeries s{c["name"].get<std::string>(), {}, {}, {}, {}};
    for (const json& p : report["points"])
      if (p["config"] == s.name && p[key].is_number()) {
        s.x.push_back(p["prompt_tokens"].get<double>());
        s.y.push_back(p[key].get<double>());
      }
    series.push_back(std::move(s));
  }
  return svg_xy_chart(title, {"prompt tokens (log)", true}, y, series, true);
}

std::string acceptance_chart(const json& report) {
  std::vector<ChartSeries> series;
  for (const json& r : report["speculative"]) {
    if (!r.contains("acceptance_per_pos")) continue;
    ChartSeries s{r["config"].get<std::string>() + " (" + r["method"].get<std::string>() + ")", {}, {}, {}, {}};
    for (size_t i = 0; i < r["acceptance_per_pos"].size(); ++i) {
      s.x.push_back(static_cast<double>(i + 1));
      s.y.push_back(r["acceptance_per_pos"][i].is_number() ? r["acceptance_per_pos"][i].get<double>() : kNaN);
    }
    series.push_back(std::move(s));
  }
  return svg_xy_chart(series.empty() ? "Acceptance per draft position (no configuration speculates)"
                                     : "Acceptance per draft position (accepted at position / steps)",
                      {"draft position", false, true}, {"share of steps accepted", false, false, 0, 1}, series, true);
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) fail(ErrorKind::kIo, "cannot write plot {}", path.string());
}

}  // namespace

std::vector<PlotFile> report_plot_files() {
  return {{"decode_per_scenario.svg", "Decode tok/s per scenario and configuration"},
          {"prefill_vs_prompt.svg", "Prefill tok/s vs prompt length"},
          {"acceptance_per_position.svg", "Acceptance per draft position"},
          {"ttft_vs_prompt.svg", "TTFT vs prompt tokens"}};
}

void write_report_plots(const json& report, const std::filesystem::path& dir) {
  write_file(dir / "decode_per_scenario.svg", decode_chart(report));
  write_file(dir / "prefill_vs_prompt.svg",
             points_chart(report, "prefill_tok_s", "Prefill tok/s vs prompt length (points: requests; lines: medians)",
                          {"prefill tok/s", false}));
  write_file(dir / "acceptance_per_position.svg", acceptance_chart(report));
  write_file(dir / "ttft_vs_prompt.svg",
             points_chart(report, "ttft_s", "TTFT vs prompt tokens (points: requests; lines: medians)", {"TTFT s (log)", true}));
}

}  // namespace ninfer::bench
