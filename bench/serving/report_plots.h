// Owns the report's four plots, drawn from report.json: decode tok/s per scenario per configuration, prefill tok/s
// vs prompt length, acceptance per draft position, TTFT vs prompt tokens.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ninfer::bench {

struct PlotFile {
  std::string file;   // name inside the report folder
  std::string title;
};

// The plots this report draws, in order (the Markdown links them).
std::vector<PlotFile> report_plot_files();

// Writes every plot of report_plot_files() into `dir`. Throws ninfer::Error naming a file it cannot write.
void write_report_plots(const nlohmann::json& report, const std::filesystem::path& dir);

}  // namespace ninfer::bench
