// ninfer-bench's pure parts, without a server: run files and flag merging, the corpus prompt, the start-log readings,
// the sweep's flags, the figures from hand-made JSONL lines, the Markdown's numbers and the SVG ticks.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/serving/context_sweep.h"
#include "bench/serving/report_figures.h"
#include "bench/serving/report_markdown.h"
#include "bench/serving/run_file.h"
#include "bench/serving/scenario_prompt.h"
#include "bench/serving/serve_process.h"
#include "bench/serving/svg_chart.h"
#include "engine/core/error.h"
#include "tests/support/test_files.h"

namespace {

using json = nlohmann::json;
using namespace ninfer::bench;
using ninfer::testing::TempDir;
using ninfer::testing::write_file;

TEST(BenchRunFile, OwnFlagsReplaceCommonOnesInPlace) {
  const std::vector<std::string> common = {"--max-context", "196608", "--greedy", "--kv-capacity", "196608"};
  EXPECT_EQ(merge_flags(common, {"--max-context", "155648", "--spec", "dflash2", "--greedy"}),
            (std::vector<std::string>{"--max-context", "155648", "--greedy", "--kv-capacity", "196608", "--spec",
                                      "dflash2"}));
  EXPECT_EQ(merge_flags({"--reasoning-budget", "-1"}, {}), (std::vector<std::string>{"--reasoning-budget", "-1"}));
}

TEST(BenchRunFile, ReadsPathsRelativeToItsFolderAndNamesBadFields) {
  TempDir dir;
  write_file(dir.file("p.txt"), "hello\n");
  write_file(dir.file("run.json"), R"({"common_flags": ["--greedy"], "repeats": 2,
    "configurations": [{"name": "a", "model": "m.ninfer", "flags": ["--spec", "mtp"],
                        "sweep": {"start": 32768, "step": 8192}}],
    "scenarios": [{"id": "s", "prompt_file": "p.txt", "max_tokens": 8}]})");
  const RunFile r = load_run_file(dir.file("run.json"));
  ASSERT_EQ(r.configs.size(), 1u);
  EXPECT_EQ(r.configs[0].model, (dir.path() / "m.ninfer").lexically_normal().string());
  EXPECT_EQ(r.configs[0].flags, (std::vector<std::string>{"--greedy", "--spec", "mtp"}));
  ASSERT_TRUE(r.configs[0].sweep);
  EXPECT_EQ(r.configs[0].sweep->min, 8192);
  EXPECT_EQ(r.scenarios[0].repeats, 2);
  EXPECT_EQ(scenario_prompt(r.scenarios[0]), "hello");

  write_file(dir.file("bad.json"), R"({"configurations": [{"name": "a", "flags": ["--port", "1"]}],
    "scenarios": [{"id": "s", "prompt_file": "p.txt", "max_tokens": 8}]})");
  try {
    load_run_file(dir.file("bad.json"));
    FAIL() << "a run file setting --port must be refused";
  } catch (const ninfer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--port"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("configurations[0]"), std::string::npos) << e.what();
  }
  write_file(dir.file("url.json"), R"({"configurations": [{"name": "a", "url": "http://127.0.0.1:1"}],
    "scenarios": [{"id": "s", "prompt_file": "p.txt", "max_tokens": 8}]})");
  EXPECT_THROW(load_run_file(dir.file("url.json")), ninfer::Error);  // a url needs its jsonl
}

TEST(BenchCorpus, DeterministicFilesWithHeadersCutAtALineEnd) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "b" / "sub");
  std::filesystem::create_directories(dir.path() / "a");
  write_file(dir.file("b/z.h"), std::string(40, 'z') + "\n");
  write_file(dir.file("b/sub/y.cpp"), std::string(40, 'y') + "\n");
  write_file(dir.file("b/skip.txt"), "not taken\n");
  write_file(dir.file("a/x.h"), std::string(30, 'x') + "\n" + std::string(30, 'x') + "\n");
  SourceCorpus c{dir.path(), {"b", "a"}, {".h", ".cpp"}, 200, "Q?"};
  EXPECT_EQ(corpus_files(c), (std::vector<std::string>{"b/sub/y.cpp", "b/z.h", "a/x.h"}));
  const std::string p = corpus_prompt(c);
  EXPECT_EQ(p.rfind("// ===== FILE: b/sub/y.cpp =====\n", 0), 0u);
  EXPECT_LE(p.size(), 200u + 1 + 2);
  EXPECT_EQ(p.substr(p.size() - 3), "\nQ?");
  EXPECT_EQ(p.find("not taken"), std::string::npos);
  EXPECT_EQ(corpus_prompt(c), p);
  // a/x.h does not fit whole: it is cut after its first line.
  EXPECT_NE(p.find("// ===== FILE: a/x.h =====\n" + std::string(30, 'x') + "\n\nQ?"), std::string::npos);
}

TEST(BenchServeLog, MemoryAndShortfallLines) {
  const std::string gpu =
      "[info] device 0: free after load 200.4 MiB, planned slack 156.0 MiB\n"
      "[info] device 1: free after load 370.0 MiB, planned slack 325.5 MiB\n";
  MemoryReading m = parse_memory_reading(gpu);
  EXPECT_DOUBLE_EQ(*m.free_after_load_mib, 200.4);
  EXPECT_DOUBLE_EQ(*m.planned_slack_mib, 156.0);
  m = parse_memory_reading("[info] memory plan: weights 27.6 MiB, KV cache 16.0 MiB (16384 tokens); total 60.7 MiB of "
                           "64.0 MiB available, slack 3.3 MiB; host free after load 64.0 MiB\n");
  EXPECT_DOUBLE_EQ(*m.planned_slack_mib, 3.3);
  EXPECT_DOUBLE_EQ(*m.free_after_load_mib, 64.0);
  EXPECT_FALSE(parse_memory_reading("nothing\n").free_after_load_mib);

  const auto s = parse_plan_shortfall(
      "[error] memory plan does not fit at --max-context 188416: device 0 (rank 0): needs 1 bytes (1 MiB), 1 bytes "
      "(1 MiB) available, 746586112 bytes (712.0 MiB) missing; device 1 (rank 1): needs 1 bytes (1 MiB), 1 bytes (1 "
      "MiB) available, 10485760 bytes (10.0 MiB) missing; the largest --max-context that fits is 155648\n");
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->missing_mib, 712.0);
  EXPECT_EQ(s->message.rfind("memory plan does not fit", 0), 0u);
  EXPECT_FALSE(parse_plan_shortfall("[info] model ready\n"));
}

TEST(BenchSweep, ContextAndNumericCapacityAreReplaced) {
  EXPECT_EQ(with_context({"--max-context", "196608", "--kv-capacity", "196608", "--greedy"}, 188416),
            (std::vector<std::string>{"--max-context", "188416", "--kv-capacity", "188416", "--greedy"}));
  EXPECT_EQ(with_context({"--kv-capacity", "auto"}, 8192),
            (std::vector<std::string>{"--kv-capacity", "auto", "--max-context", "8192"}));
}

json line(int64_t prompt, int64_t completion, double decode_s, double total_s, const std::string& stop, bool empty) {
  return {{"http_status", 200}, {"prompt_tokens", prompt}, {"completion_tokens", completion},
          {"stop_reason", stop}, {"empty_content", empty},
          {"timings", {{"prefill_s", 0.5}, {"decode_s", decode_s}, {"ttft_s", 0.6}, {"total_s", total_s}}},
          {"prefill_tok_s", prompt / 0.5}, {"decode_tok_s", (completion - 1) / decode_s}};
}

TEST(BenchFigures, SeedAggregationTruncationAndNoise) {
  RunFile run;
  run.name = "t";
  run.scenarios = {{"s1", "s1", {}, {}, 100, "medium", 2}, {"s2", "s2", {}, {}, 100, "medium", 2}};
  auto req = [](const std::string& s, int rep, json l) {
    RequestRun r;
    r.scenario = s, r.repeat = rep, r.http_status = 200, r.line = std::move(l);
    return r;
  };
  ConfigRun a, b;
  a.name = "A", a.load_s = 1, a.process_s = 20;
  a.requests = {req("s1", 1, line(100, 101, 1.0, 2.0, "output_limit", true)),
                req("s1", 2, line(100, 101, 1.0, 2.0, "output_limit", false)),
                req("s2", 1, line(1000, 51, 0.5, 1.5, "eos", false)),
                req("s2", 2, line(1000, 51, 0.5, 1.5, "eos", false))};
  b.name = "B", b.load_s = 1, b.process_s = 20;
  b.requests = {req("s1", 1, line(100, 101, 0.98, 2.0, "output_limit", false)),
                req("s1", 2, line(100, 101, 1.0, 2.0, "output_limit", false)),
                req("s2", 1, line(1000, 51, 0.25, 1.0, "eos", false)),
                req("s2", 2, line(1000, 51, 0.25, 1.0, "eos", false))};
  ReportInput in;
  in.run = &run;
  in.configs = {a, b};
  in.started_at = in.finished_at = "2026-01-01T00:00:00Z";
  const json r = build_report(in);
  const json& oa = r["overview"][0];
  EXPECT_EQ(oa["prompt_tokens"], 2200);
  EXPECT_EQ(oa["completion_tokens"], 304);
  EXPECT_DOUBLE_EQ(oa["decode_tok_s"].get<double>(), (100.0 * 2 + 50.0 * 2) / 3.0);  // Σ(c − 1) / Σ decode_s
  EXPECT_DOUBLE_EQ(oa["e2e_tok_s"].get<double>(), 304.0 / 7.0);
  EXPECT_EQ(oa["truncated"], 2);
  EXPECT_EQ(oa["empty_content"], 1);
  EXPECT_EQ(r["overview_total"]["requests"], 8);
  // s1: B's 102.04 / 100 vs A's 100 / 100: B's margin (1%) is within B's own 2% spread.
  const json& s1 = r["per_scenario"][0];
  EXPECT_EQ(s1["fastest"], "B");
  EXPECT_FALSE(s1["stable"].get<bool>());
  // s2: B (200 tok/s) beats A (100) with no spread: stable.
  const json& s2 = r["per_scenario"][1];
  EXPECT_EQ(s2["fastest"], "B");
  EXPECT_DOUBLE_EQ(s2["margin"].get<double>(), 1.0);
  EXPECT_TRUE(s2["stable"].get<bool>());
  EXPECT_TRUE(r["noise"]["measured"].get<bool>());
  EXPECT_EQ(r["long_context_scenario"], "s2");
  const std::string md = render_markdown(r);
  EXPECT_NE(md.find("| A | 4 | 2,200 | 304 | 2,504 |"), std::string::npos) << md;
  EXPECT_NE(md.find("B (+100.0%)"), std::string::npos);
  EXPECT_NE(md.find("within noise"), std::string::npos);
}

TEST(BenchFigures, MedianAndThousands) {
  EXPECT_EQ(min_median_max({3, 1, 2})["median"], 2.0);
  EXPECT_EQ(min_median_max({4, 1, 2, 3})["median"], 2.5);
  EXPECT_EQ(thousands(149370), "149,370");
  EXPECT_EQ(thousands(999), "999");
  EXPECT_EQ(thousands(-1000), "-1,000");
}

TEST(BenchSvg, NiceTicksAndEscapedText) {
  EXPECT_EQ(nice_ticks(0, 118, false), (std::vector<double>{0, 50, 100, 150}));
  EXPECT_EQ(nice_ticks(100, 10000, true), (std::vector<double>{100, 1000, 10000}));
  const std::string svg = svg_bar_chart("a <b> & c", {"s1"}, {{"A&B", {}, {1.0}, {}, {}}}, {"y", false});
  EXPECT_NE(svg.find("a &lt;b&gt; &amp; c"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
}

}  // namespace
