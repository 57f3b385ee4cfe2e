#include "bench/serving/report_markdown.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "bench/serving/report_plots.h"

namespace ninfer::bench {

using json = nlohmann::json;

namespace {

std::string f(const json& v, int digits) {
  return v.is_number() ? fmt::format("{:.{}f}", v.get<double>(), digits) : std::string("–");
}
std::string pct(double v, bool sign = false) {
  return sign ? fmt::format("{:+.1f}%", 100 * v) : fmt::format("{:.1f}%", 100 * v);
}
std::string ints(const json& v) { return v.is_number() ? thousands(static_cast<int64_t>(std::llround(v.get<double>()))) : "–"; }
// 1101.8 → "1,101.8 MiB".
std::string mib(const json& v) {
  if (!v.is_number()) return "–";
  const double x = v.get<double>();
  const int64_t tenths = std::llround(std::fabs(x) * 10);
  return fmt::format("{}{}.{} MiB", x < 0 ? "-" : "", thousands(tenths / 10), tenths % 10);
}

// "median (min–max)" when there were repeats, else the value.
std::string spread_cell(const json& m, int digits) {
  if (!m.is_object()) return "–";
  const std::string med = fmt::format("{:.{}f}", m["median"].get<double>(), digits);
  if (m["min"] == m["max"]) return med;
  return fmt::format("{} ({:.{}f}–{:.{}f})", med, m["min"].get<double>(), digits, m["max"].get<double>(), digits);
}

std::string row(const std::vector<std::string>& cells) {
  std::string s = "|";
  for (const std::string& c : cells) s += " " + c + " |";
  return s + "\n";
}
std::string rule(size_t n) {
  std::string s = "|";
  for (size_t i = 0; i < n; ++i) s += "---|";
  return s + "\n";
}

std::vector<std::string> config_names(const json& r) {
  std::vector<std::string> n;
  for (const json& c : r["configurations"]) n.push_back(c["name"].get<std::string>());
  return n;
}

std::string header(const json& r) {
  const json& run = r["run"];
  std::string s = fmt::format("# ninfer-bench report: {}\n\n", run["name"].get<std::string>());
  if (!run["description"].get<std::string>().empty()) s += run["description"].get<std::string>() + "\n\n";
  s += fmt::format("- Run file: `{}`\n- Started {}, finished {} ({:.1f} s wall)\n- Server: `{}`\n",
                   run["run_file"].get<std::string>(), run["started_at"].get<std::string>(),
                   run["finished_at"].get<std::string>(), run["wall_s"].get<double>(),
                   run["serve_binary"].get<std::string>());
  s += "- Every figure is computed from the server's JSONL lines (raw/<configuration>.jsonl); report.json holds them "
       "all.\n\n## Configurations\n\n";
  s += row({"name", "description", "command"}) + rule(3);
  for (const json& c : r["configurations"]) {
    std::string cmd;
    for (const json& a : c["command"]) cmd += (cmd.empty() ? "" : " ") + a.get<std::string>();
    s += row({c["name"].get<std::string>(), c["description"].get<std::string>(),
              cmd.empty() ? "running server " + c["url"].get<std::string>() + " (load and process s not measured)"
                          : "`" + cmd + "`"});
  }
  s += "\nEach configuration's server is started on its own, the scenarios are sent one after another as "
       "non-streaming chat requests, then the server is stopped with SIGTERM.\n\n## Scenarios\n\n";
  s += row({"id", "content", "prompt chars", "max_tokens", "reasoning_effort", "repeats"}) + rule(6);
  for (const json& sc : r["scenarios"])
    s += row({sc["id"].get<std::string>(), sc["title"].get<std::string>(), ints(sc["prompt_chars"]),
              ints(sc["max_tokens"]), sc["reasoning_effort"].get<std::string>().empty() ? "(server default)"
                                                                                      : sc["reasoning_effort"].get<std::string>(),
              ints(sc["repeats"])});
  return s + "\n";
}

std::string overview(const json& r) {
  std::string s = "## 1. Overview\n\n";
  s += row({"configuration", "requests", "prompt tok", "generated tok", "total tok", "load s", "request s",
            "process s", "decode tok/s", "end-to-end tok/s", "truncated / empty", "failed"}) + rule(12);
  auto line = [&](const json& o, bool bold) {
    const std::string name = bold ? "**" + o["config"].get<std::string>() + "**" : o["config"].get<std::string>();
    return row({name, ints(o["requests"]), ints(o["prompt_tokens"]), ints(o["completion_tokens"]),
                ints(o["total_tokens"]), f(o["load_s"], 1), f(o["request_s"], 1), f(o["process_s"], 1),
                f(o["decode_tok_s"], 2), f(o["e2e_tok_s"], 2),
                fmt::format("{}/{}", o["truncated"].get<int64_t>(), o["empty_content"].get<int64_t>()),
                ints(o["failed"])});
  };
  for (const json& o : r["overview"]) s += line(o, false);
  if (r["overview"].size() > 1) s += line(r["overview_total"], true);
  s += "\nHow each figure is counted (the seed's way): request s = Σ of the lines' `timings.total_s`; process s = the "
       "server process from start to exit, load and requests included; load s = start until `/health` answers 200; "
       "decode tok/s = Σ(completion − 1) / Σ `decode_s` over the requests with at least two tokens; end-to-end "
       "tok/s = completion / request s; truncated = `stop_reason` `output_limit`; empty = `empty_content`. Sums "
       "run over every repeat.\n\n";
  for (const json& o : r["overview"])
    if (!o["start_error"].get<std::string>().empty())
      s += fmt::format("- {} did not start: {}\n", o["config"].get<std::string>(), o["start_error"].get<std::string>());
  return s;
}

std::string per_scenario(const json& r) {
  const std::vector<std::string> names = config_names(r);
  std::string s = "## 2. Decode tok/s per scenario\n\n";
  std::vector<std::string> head = {"scenario"};
  head.insert(head.end(), names.begin(), names.end());
  head.push_back("fastest");
  s += row(head) + rule(head.size());
  for (const json& sc : r["per_scenario"]) {
    std::vector<std::string> cells = {sc["scenario"].get<std::string>()};
    for (const std::string& n : names) {
      std::string c = spread_cell(sc["by_config"].value(n, json()), 2);
      if (sc.contains("fastest") && sc["fastest"] == n && sc.contains("margin")) c = "**" + c + "**";
      cells.push_back(c);
    }
    if (sc.contains("margin"))
      cells.push_back(fmt::format("{} ({}){}", sc["fastest"].get<std::string>(), pct(sc["margin"].get<double>(), true),
                                  sc["stable"].get<bool>() ? "" : ", within noise"));
    else cells.push_back(sc.contains("fastest") ? sc["fastest"].get<std::string>() : "–");
    s += row(cells);
  }
  s += "\nCells: the median over the repeats, with (min–max) when they differ; the fastest configuration's median is "
       "bold, with its margin over the runner-up.\n\n";
  return s;
}

std::string prefill(const json& r) {
  const std::vector<std::string> names = config_names(r);
  std::string s = fmt::format("## 3. Long-context prefill ({})\n\n", r["long_context_scenario"].get<std::string>());
  std::vector<std::string> head = {"figure"};
  head.insert(head.end(), names.begin(), names.end());
  s += row(head) + rule(head.size());
  const std::vector<std::pair<const char*, std::pair<const char*, int>>> figures = {
      {"prompt tokens", {"prompt_tokens", 0}}, {"prefill s", {"prefill_s", 3}},
      {"prefill tok/s", {"prefill_tok_s", 1}}, {"TTFT s", {"ttft_s", 3}}};
  for (const auto& [label, key] : figures) {
    std::vector<std::string> cells = {label};
    for (const json& p : r["prefill"])
      cells.push_back(std::string(key.first) == "prompt_tokens" && p[key.first].is_object() &&
                              p[key.first]["min"] == p[key.first]["max"]
                          ? ints(p[key.first]["median"]) : spread_cell(p[key.first], key.second));
    s += row(cells);
  }
  return s + "\nThe scenario with the longest prompt; medians over its repeats (min–max). Short prompts' prefill "
             "rates are dominated by fixed per-request costs and are only plotted (prefill_vs_prompt.svg).\n\n";
}

// ["s1#1", "s1#2", "s4#1"] → ["s1 ×2", "s4"]: the requests of one scenario counted together.
std::vector<std::string> by_scenario(const json& requests) {
  std::vector<std::pair<std::string, int>> counts;
  for (const json& e : requests) {
    const std::string id = e.get<std::string>().substr(0, e.get<std::string>().rfind('#'));
    if (!counts.empty() && counts.back().first == id) ++counts.back().second;
    else counts.emplace_back(id, 1);
  }
  std::vector<std::string> out;
  for (const auto& [id, n] : counts) out.push_back(n > 1 ? fmt::format("{} ×{}", id, n) : id);
  return out;
}

std::string memory(const json& r) {
  std::string s = "## 4. Memory and truncation\n\n";
  s += row({"configuration", "free after start", "planned slack", "truncated (output_limit)", "empty content",
            "stopped before max_tokens"}) + rule(6);
  for (const json& m : r["memory"]) {
    std::string empty_in, natural;
    for (const std::string& e : by_scenario(m["empty_in"])) empty_in += (empty_in.empty() ? "" : ", ") + e;
    for (const json& n : m["not_truncated"])
      natural += fmt::format("{}{} ({} tok, {})", natural.empty() ? "" : ", ", n["request"].get<std::string>(),
                             ints(n["completion_tokens"]), n["stop_reason"].get<std::string>());
    s += row({m["config"].get<std::string>(), mib(m["free_after_load_mib"]), mib(m["planned_slack_mib"]),
              fmt::format("{}/{}", m["truncated"].get<int64_t>(), m["served"].get<int64_t>()),
              fmt::format("{}{}", m["empty_content"].get<int64_t>(), empty_in.empty() ? "" : " (" + empty_in + ")"),
              natural.empty() ? "–" : natural});
  }
  return s + "\nFree after start and planned slack are read from the server's start log (per GPU: the smallest over "
             "the devices; on the CPU: the host plan). Requests are named scenario#repeat.\n\n";
}

std::string speculative(const json& r) {
  std::string s = "## 5. Speculative decoding\n\n";
  s += row({"configuration", "method", "K", "proposal head", "acceptance", "tokens per step",
            "acceptance per position", "decode tok/s", "vs baseline"}) + rule(9);
  for (const json& sp : r["speculative"]) {
    const bool spec = sp["method"] != "none";
    std::string pos;
    if (spec)
      for (const json& p : sp["acceptance_per_pos"]) pos += (pos.empty() ? "" : " / ") + (p.is_number() ? pct(p.get<double>()) : "–");
    s += row({sp["config"].get<std::string>(), sp["method"].get<std::string>(), spec ? ints(sp["draft_tokens"]) : "–",
              spec ? sp["head"].get<std::string>() : "–", spec && sp["acceptance_rate"].is_number() ? pct(sp["acceptance_rate"].get<double>()) : "–",
              spec ? f(sp["tokens_per_step"], 2) : "–", spec ? pos : "–", f(sp["decode_tok_s"], 2),
              sp.contains("vs_baseline") ? fmt::format("{} vs {}", pct(sp["vs_baseline"].get<double>(), true),
                                                       sp["baseline"].get<std::string>()) : "–"});
  }
  return s + "\nAcceptance = Σ accepted / Σ drafted; tokens per step = 1 + Σ accepted / Σ steps; acceptance per "
             "position = Σ accepted at that draft position / Σ steps. The baseline is the first configuration "
             "without speculation.\n\n";
}

std::string sweeps(const json& r) {
  if (r["sweeps"].empty()) return "";
  std::string s = "## 6. Largest --max-context that starts\n\nEach step starts the configuration's server at that "
                  "--max-context (and --kv-capacity, when the configuration gives a number), from the top down, until "
                  "one answers /health; a refused start gives the memory plan's shortfall (the largest over the "
                  "devices).\n\n";
  for (const json& sw : r["sweeps"]) {
    std::string probe;
    for (const json& f : sw.value("probe_flags", json::array())) probe += " " + f.get<std::string>();
    s += fmt::format("{}{}: {}\n\n", sw["config"].get<std::string>(),
                     probe.empty() ? "" : fmt::format(" (probed with{})", probe),
                     sw["largest_started"].get<int64_t>() > 0
                         ? "largest start at --max-context " + thousands(sw["largest_started"].get<int64_t>())
                         : std::string("no probed context started"));
    s += row({"--max-context", "result"}) + rule(2);
    for (const json& st : sw["steps"])
      s += row({thousands(st["max_context"].get<int64_t>()),
                st["started"].get<bool>() ? "starts, planned slack " + mib(st["slack_mib"])
                : st["missing_mib"].is_number() ? "short by " + mib(st["missing_mib"])
                                                : st["message"].get<std::string>()});
    s += "\n";
  }
  return s;
}

std::string notes(const json& r) {
  std::string s = "## Notes\n\n";
  const json& noise = r["noise"];
  std::vector<double> spreads;
  for (const json& sc : r["per_scenario"])
    for (const auto& [name, m] : sc["by_config"].items())
      if (m.is_object()) spreads.push_back(m["spread"].get<double>());
  if (noise["measured"].get<bool>() && !spreads.empty()) {
    std::sort(spreads.begin(), spreads.end());
    s += fmt::format("- Run-to-run noise, measured: each scenario ran at least {} times per configuration; the spread "
                     "(max − min) / median of decode tok/s was {} at the median and {} at most. A fastest margin "
                     "within its scenario's largest spread is marked \"within noise\": it is not a stable advantage.\n",
                     noise["min_repeats"].get<int>(), pct(spreads[spreads.size() / 2]), pct(spreads.back()));
  } else {
    s += fmt::format("- Run-to-run noise was not measured (one run per scenario): the seed's rule applies, a decode "
                     "difference under ~{} is not a stable advantage. Set \"repeats\" to 3 or more to measure it.\n",
                     pct(noise["seed_rule"].get<double>()));
  }
  int within = 0, total = 0;
  for (const json& sc : r["per_scenario"])
    if (sc.contains("stable")) ++total, within += sc["stable"].get<bool>() ? 0 : 1;
  if (total > 0) s += fmt::format("- {} of {} scenario winners are within the noise.\n", within, total);
  const json& t = r["overview_total"];
  if (t["truncated"].get<int64_t>() > 0)
    s += fmt::format("- Truncation: {} of {} requests reached max_tokens (output_limit), {} with empty content (the "
                     "budget went to reasoning). Their completion tokens are the cut of a fixed budget, not full "
                     "answer lengths; decode tok/s is not affected, token totals and request seconds are.\n",
                     t["truncated"].get<int64_t>(), t["requests"].get<int64_t>(), t["empty_content"].get<int64_t>());
  if (t["failed"].get<int64_t>() > 0)
    s += fmt::format("- {} requests failed or have no JSONL line; they are left out of every speed figure (report.json "
                     "\"requests\" has their errors).\n", t["failed"].get<int64_t>());
  s += "- Load seconds depend on the OS page cache (an artifact read shortly before loads faster); they are no "
       "measure of a cold start.\n\n";
  return s;
}

std::string plots() {
  std::string s = "## Plots\n\n";
  for (const PlotFile& p : report_plot_files()) s += fmt::format("![{}]({})\n\n", p.title, p.file);
  return s;
}

}  // namespace

std::string thousands(int64_t v) {
  std::string digits = std::to_string(std::llabs(v)), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string render_markdown(const json& r) {
  if (r["configurations"].empty()) return header(r) + sweeps(r);  // --sweep-only
  return header(r) + overview(r) + per_scenario(r) + prefill(r) + memory(r) + speculative(r) + sweeps(r) + notes(r) +
         plots();
}

}  // namespace ninfer::bench
