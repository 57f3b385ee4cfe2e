// ninfer-bench --quick against ninfer-tiny (plain and --spec mtp): every table of report.md, report.json's figures
// recomputed here from the raw JSONL lines (independently of bench/serving/report_figures.cpp), the plots, the
// truncated and empty-content counts, and the --max-context sweep.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/support/child_process.h"
#include "tests/support/test_files.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ninfer::testing::read_file;
using ninfer::testing::read_jsonl;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// 30360 → "30,360", written here again so the test does not reuse the report's formatter.
std::string grouped(int64_t v) {
  std::string d = std::to_string(v), out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i > 0 && (d.size() - i) % 3 == 0) out += ',';
    out += d[i];
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

void expect_near_rel(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 1e-9 * std::max(1.0, std::fabs(want))) << what;
}

class BenchQuick : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ninfer::testing::TempDir();
    out_ = dir_->path() / "report";
    const std::string bench = env_or("NINFER_BENCH_BINARY", std::string(NINFER_BINARY_DIR) + "/bench/ninfer-bench");
    const std::string serve = env_or("NINFER_SERVE_BINARY", std::string(NINFER_BINARY_DIR) + "/apps/ninfer-serve");
    log_ = (dir_->path() / "bench.log").string();
    const pid_t pid = ninfer::testing::spawn_process(bench, {"--quick", "--out", out_.string(), "--serve-binary", serve},
                                                     log_);
    const auto status = ninfer::testing::wait_exit(pid, std::chrono::minutes(8));
    if (!status) kill(pid, SIGKILL), waitpid(pid, nullptr, 0);
    exit_code_ = status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
    if (fs::exists(out_ / "report.json")) report_ = json::parse(read_file((out_ / "report.json").string()));
    if (fs::exists(out_ / "report.md")) markdown_ = read_file((out_ / "report.md").string());
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    ASSERT_EQ(exit_code_, 0) << "ninfer-bench --quick failed; its log:\n" << read_file(log_);
    ASSERT_TRUE(report_.is_object());
  }
  static std::vector<json> lines(const std::string& config) {
    return read_jsonl((out_ / "raw" / (config + ".jsonl")).string());
  }
  static const json& overview(const std::string& config) {
    for (const json& o : report_["overview"])
      if (o["config"] == config) return o;
    throw std::runtime_error("no overview row for " + config);
  }

  static inline ninfer::testing::TempDir* dir_ = nullptr;
  static inline fs::path out_;
  static inline std::string log_;
  static inline int exit_code_ = -1;
  static inline json report_;
  static inline std::string markdown_;
};

const std::vector<std::string> kConfigs = {"plain", "mtp"};

TEST_F(BenchQuick, EveryTableIsInTheMarkdown) {
  for (const char* heading : {"## 1. Overview", "## 2. Decode tok/s per scenario", "## 3. Long-context prefill",
                              "## 4. Memory and truncation", "## 5. Speculative decoding",
                              "## 6. Largest --max-context that starts", "## Notes", "## Plots"})
    EXPECT_NE(markdown_.find(heading), std::string::npos) << heading;
  EXPECT_NE(markdown_.find("Run-to-run noise, measured"), std::string::npos);
}

TEST_F(BenchQuick, OverviewMatchesTheJsonlLines) {
  const size_t expected_requests = 6 * 3;  // quick.json: six scenarios, three repeats
  for (const std::string& c : kConfigs) {
    const std::vector<json> ls = lines(c);
    ASSERT_EQ(ls.size(), expected_requests) << c;
    int64_t prompt = 0, completion = 0, truncated = 0, empty = 0;
    double total_s = 0, decode_s = 0, decode_tokens = 0;
    for (const json& l : ls) {
      EXPECT_EQ(l["http_status"], 200);
      prompt += l["prompt_tokens"].get<int64_t>();
      const int64_t ct = l["completion_tokens"].get<int64_t>();
      completion += ct;
      total_s += l["timings"]["total_s"].get<double>();
      if (ct >= 2 && l["timings"]["decode_s"].get<double>() > 0)
        decode_tokens += static_cast<double>(ct - 1), decode_s += l["timings"]["decode_s"].get<double>();
      truncated += l["stop_reason"] == "output_limit";
      empty += l["empty_content"].get<bool>();
    }
    const json& o = overview(c);
    EXPECT_EQ(o["requests"], expected_requests);
    EXPECT_EQ(o["prompt_tokens"], prompt) << c;
    EXPECT_EQ(o["completion_tokens"], completion) << c;
    EXPECT_EQ(o["total_tokens"], prompt + completion) << c;
    expect_near_rel(o["request_s"].get<double>(), total_s, c + " request_s");
    expect_near_rel(o["decode_tok_s"].get<double>(), decode_tokens / decode_s, c + " decode tok/s");
    expect_near_rel(o["e2e_tok_s"].get<double>(), static_cast<double>(completion) / total_s, c + " end-to-end tok/s");
    EXPECT_EQ(o["truncated"], truncated) << c;
    EXPECT_EQ(o["empty_content"], empty) << c;
    EXPECT_EQ(o["failed"], 0) << c;
    EXPECT_GT(o["load_s"].get<double>(), 0) << c;
    EXPECT_GE(o["process_s"].get<double>(), o["load_s"].get<double>() + total_s * 0.99) << c;
    // The Markdown row carries the same numbers.
    const std::string row = fmt::format("| {} | {} | {} | {} | {} |", c, expected_requests, grouped(prompt),
                                        grouped(completion), grouped(prompt + completion));
    EXPECT_NE(markdown_.find(row), std::string::npos) << row;
    EXPECT_NE(markdown_.find(fmt::format("| {:.2f} | {:.2f} | {}/{} |", decode_tokens / decode_s,
                                         static_cast<double>(completion) / total_s, truncated, empty)),
              std::string::npos) << c;
  }
}

TEST_F(BenchQuick, TruncatedAndEmptyAnswersAreCounted) {
  // ninfer-tiny under --greedy: q1_geometry spends its 384 tokens (output_limit); q2_impl's 256 all go to thinking.
  for (const std::string& c : kConfigs) {
    int truncated_q1 = 0, empty_q2 = 0;
    for (const json& l : lines(c)) {
      if (l["max_tokens"] == 384 && l["stop_reason"] == "output_limit") ++truncated_q1;
      if (l["max_tokens"] == 256 && l["empty_content"].get<bool>() && l["reasoning_tokens"] == l["completion_tokens"])
        ++empty_q2;
    }
    EXPECT_EQ(truncated_q1, 3) << c << ": q1_geometry should hit max_tokens in every repeat";
    EXPECT_GE(empty_q2, 3) << c << ": some 256-token answers should be all reasoning";
    const json& o = overview(c);
    EXPECT_GE(o["truncated"].get<int>(), truncated_q1);
    EXPECT_GE(o["empty_content"].get<int>(), empty_q2);
    for (const json& m : report_["memory"])
      if (m["config"] == c) {
        EXPECT_EQ(m["truncated"], o["truncated"]);
        EXPECT_EQ(m["empty_content"], o["empty_content"]);
        EXPECT_EQ(m["empty_in"].size(), o["empty_content"].get<size_t>());
        EXPECT_TRUE(m["free_after_load_mib"].is_number()) << "the start log's memory line was not read";
        EXPECT_TRUE(m["planned_slack_mib"].is_number());
      }
  }
}

TEST_F(BenchQuick, PerScenarioMediansAndNoise) {
  EXPECT_TRUE(report_["noise"]["measured"].get<bool>());
  EXPECT_EQ(report_["noise"]["min_repeats"], 3);
  std::map<std::string, std::map<std::string, std::vector<double>>> decode;  // scenario → config → values
  for (const json& r : report_["requests"])
    decode[r["scenario"]][r["config"]].push_back(r["line"]["decode_tok_s"].get<double>());
  // The request records are the JSONL lines themselves.
  for (const std::string& c : kConfigs) {
    std::vector<std::string> ids;
    for (const json& l : lines(c)) ids.push_back(l["request_id"]);
    for (const json& r : report_["requests"])
      if (r["config"] == c) {
        EXPECT_NE(std::find(ids.begin(), ids.end(), r["line"]["request_id"]), ids.end());
      }
  }
  ASSERT_EQ(report_["per_scenario"].size(), 6u);
  for (const json& row : report_["per_scenario"]) {
    const std::string s = row["scenario"];
    double best = -1, second = -1;
    std::string best_name;
    for (const std::string& c : kConfigs) {
      const std::vector<double>& v = decode[s][c];
      ASSERT_EQ(v.size(), 3u) << s << " " << c;
      const json& m = row["by_config"][c];
      expect_near_rel(m["median"].get<double>(), median(v), s + " " + c + " median");
      expect_near_rel(m["min"].get<double>(), *std::min_element(v.begin(), v.end()), s + " min");
      expect_near_rel(m["max"].get<double>(), *std::max_element(v.begin(), v.end()), s + " max");
      const double med = median(v);
      if (med > best) second = best, best = med, best_name = c;
      else if (med > second) second = med;
    }
    EXPECT_EQ(row["fastest"], best_name) << s;
    expect_near_rel(row["margin"].get<double>(), (best - second) / second, s + " margin");
    // Within noise exactly when the margin does not exceed the largest spread measured for the scenario.
    double noise = 0;
    for (const std::string& c : kConfigs) {
      const std::vector<double>& v = decode[s][c];
      noise = std::max(noise, (*std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end())) / median(v));
    }
    EXPECT_EQ(row["stable"].get<bool>(), (best - second) / second > noise) << s;
  }
}

TEST_F(BenchQuick, LongContextPrefill) {
  EXPECT_EQ(report_["long_context_scenario"], "q5_long_context");
  for (const json& p : report_["prefill"]) {
    std::vector<double> prefill_tok_s, ttft;
    for (const json& r : report_["requests"])
      if (r["config"] == p["config"] && r["scenario"] == "q5_long_context") {
        prefill_tok_s.push_back(r["line"]["prefill_tok_s"].get<double>());
        ttft.push_back(r["line"]["timings"]["ttft_s"].get<double>());
        EXPECT_GT(r["line"]["prompt_tokens"].get<int>(), 4000) << "the long prompt should be thousands of tokens";
      }
    ASSERT_EQ(prefill_tok_s.size(), 3u);
    expect_near_rel(p["prefill_tok_s"]["median"].get<double>(), median(prefill_tok_s), "prefill tok/s");
    expect_near_rel(p["ttft_s"]["median"].get<double>(), median(ttft), "ttft");
  }
}

TEST_F(BenchQuick, SpeculativeFigures) {
  int64_t steps = 0, drafted = 0, accepted = 0;
  std::vector<double> per_pos(3, 0);
  for (const json& l : lines("mtp")) {
    ASSERT_TRUE(l.contains("spec"));
    steps += l["spec"]["steps"].get<int64_t>(), drafted += l["spec"]["drafted"].get<int64_t>();
    accepted += l["spec"]["accepted"].get<int64_t>();
    for (size_t i = 0; i < 3; ++i) per_pos[i] += l["spec"]["accepted_per_pos"][i].get<double>();
  }
  for (const json& l : lines("plain")) EXPECT_FALSE(l.contains("spec"));
  ASSERT_GT(drafted, 0);
  bool seen = false;
  for (const json& r : report_["speculative"]) {
    if (r["config"] == "plain") {
      EXPECT_EQ(r["method"], "none");
    }
    if (r["config"] != "mtp") continue;
    seen = true;
    EXPECT_EQ(r["method"], "mtp");
    EXPECT_EQ(r["draft_tokens"], 3);
    expect_near_rel(r["acceptance_rate"].get<double>(), static_cast<double>(accepted) / drafted, "acceptance");
    expect_near_rel(r["tokens_per_step"].get<double>(), 1.0 + static_cast<double>(accepted) / steps, "tokens/step");
    ASSERT_EQ(r["acceptance_per_pos"].size(), 3u);
    for (size_t i = 0; i < 3; ++i)
      expect_near_rel(r["acceptance_per_pos"][i].get<double>(), per_pos[i] / steps, fmt::format("position {}", i + 1));
    EXPECT_EQ(r["baseline"], "plain");
    EXPECT_NE(markdown_.find(fmt::format("{:.1f}%", 100.0 * accepted / drafted)), std::string::npos);
  }
  EXPECT_TRUE(seen);
}

TEST_F(BenchQuick, ContextSweep) {
  ASSERT_EQ(report_["sweeps"].size(), 1u);
  const json& sw = report_["sweeps"][0];
  EXPECT_EQ(sw["config"], "mtp");
  const json& steps = sw["steps"];
  ASSERT_GE(steps.size(), 2u);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i]["max_context"].get<int64_t>(), 40960 - 8192 * static_cast<int64_t>(i));
    const bool last = i + 1 == steps.size();
    EXPECT_EQ(steps[i]["started"].get<bool>(), last) << i;
    if (!last) {
      EXPECT_GT(steps[i]["missing_mib"].get<double>(), 0) << i;
    }
  }
  // Each refused step needs less than the one above it.
  for (size_t i = 1; i + 1 < steps.size(); ++i)
    EXPECT_LT(steps[i]["missing_mib"].get<double>(), steps[i - 1]["missing_mib"].get<double>());
  EXPECT_EQ(sw["largest_started"], steps.back()["max_context"]);
  EXPECT_TRUE(steps.back()["slack_mib"].is_number());
}

TEST_F(BenchQuick, PlotsAreWritten) {
  for (const char* name : {"decode_per_scenario.svg", "prefill_vs_prompt.svg", "acceptance_per_position.svg",
                           "ttft_vs_prompt.svg"}) {
    const fs::path p = out_ / name;
    ASSERT_TRUE(fs::exists(p)) << name;
    const std::string svg = read_file(p.string());
    EXPECT_GT(svg.size(), 1000u) << name;
    EXPECT_EQ(svg.rfind("<svg", 0), 0u) << name;
    EXPECT_NE(svg.find("</svg>"), std::string::npos) << name;
    EXPECT_TRUE(svg.find("<rect x=") != std::string::npos || svg.find("<circle") != std::string::npos) << name;
    EXPECT_NE(markdown_.find(std::string("(") + name + ")"), std::string::npos) << name << " is not linked";
  }
  // One bar per (scenario, configuration) in the decode chart, plus the two legend swatches.
  const std::string bars = read_file((out_ / "decode_per_scenario.svg").string());
  size_t n = 0;
  for (size_t at = bars.find("<title>"); at != std::string::npos; at = bars.find("<title>", at + 1)) ++n;
  EXPECT_EQ(n, 6u * 2u);
}

}  // namespace
