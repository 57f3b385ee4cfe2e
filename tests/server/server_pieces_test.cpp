// Tests of SSE framing, the JSONL writer and record, Prometheus metrics, and the request hand-off.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "server/jsonl_log.h"
#include "server/metrics.h"
#include "server/request_report.h"
#include "server/request_stream.h"
#include "server/sse.h"

namespace ninfer::server {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

fs::path temp_file(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ninfer_server_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path p = dir / name;
  fs::remove(p);
  return p;
}

std::vector<std::string> read_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

TEST(Sse, Framing) {
  EXPECT_EQ(sse_data(json{{"a", "x\ny"}}), "data: {\"a\":\"x\\ny\"}\n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
  EXPECT_EQ(sse_comment("keep\nalive"), ": keep alive\n\n");
  // Invalid UTF-8 from an engine must not throw; it is replaced.
  std::string bad = "\xff\xfe";
  EXPECT_NO_THROW(sse_data(json{{"t", bad}}));
}

FinalResult result_with(StopReason reason) {
  FinalResult r;
  r.stop_reason = reason;
  r.prompt_tokens = 48056;
  r.completion_tokens = 2560;
  r.reasoning_tokens = 2560;
  r.timings = {0.01, 50.16, 24.0, 50.37, 74.5};
  return r;
}

TEST(JsonlRecord, EveryFieldOfTheSchema) {
  RequestRecord rec;
  rec.finished_at = std::chrono::system_clock::time_point(std::chrono::milliseconds(1760900623123));
  rec.request_id = "chatcmpl-1";
  rec.model = "qwen";
  rec.endpoint = "chat.completions";
  rec.max_tokens = 2560;
  rec.result = result_with(StopReason::kOutputLimit);
  rec.result.spec = SpecStats{"mtp", 3, 100, 300, 210, {90, 70, 50}};
  rec.empty_content = true;
  rec.settings = {"int8", 2048, 196608, 196608, false, 2, 1, "mtp", 3};
  const std::string line = jsonl_record(rec).dump();
  EXPECT_EQ(line.rfind("{\"ts\":\"2025-10-19T19:03:43.123Z\",\"request_id\":\"chatcmpl-1\",\"model\":\"qwen\"", 0), 0u)
      << "keys in the documented order: " << line;
  json j = json::parse(line);
  EXPECT_EQ(j["ts"], "2025-10-19T19:03:43.123Z");
  EXPECT_EQ(j["request_id"], "chatcmpl-1");
  EXPECT_EQ(j["model"], "qwen");
  EXPECT_EQ(j["prompt_tokens"], 48056);
  EXPECT_EQ(j["completion_tokens"], 2560);
  EXPECT_EQ(j["reasoning_tokens"], 2560);
  EXPECT_EQ(j["cached_tokens"], 0);
  EXPECT_EQ(j["finish_reason"], "length");
  EXPECT_EQ(j["stop_reason"], "output_limit");
  EXPECT_EQ(j["empty_content"], true);
  for (const char* k : {"queue_s", "prefill_s", "decode_s", "ttft_s", "total_s"}) EXPECT_TRUE(j["timings"][k].is_number()) << k;
  EXPECT_NEAR(j["prefill_tok_s"].get<double>(), 48056 / 50.16, 1e-9);  // the seed's 958.1 tok/s
  EXPECT_NEAR(j["decode_tok_s"].get<double>(), 2559 / 24.0, 1e-9);    // (completion - 1) / decode_s
  EXPECT_EQ(j["spec"]["method"], "mtp");
  EXPECT_EQ(j["spec"]["draft_tokens"], 3);
  EXPECT_EQ(j["spec"]["drafted"], 300);
  EXPECT_EQ(j["spec"]["accepted"], 210);
  EXPECT_DOUBLE_EQ(j["spec"]["acceptance_rate"], 0.7);
  EXPECT_EQ(j["settings"]["kv_dtype"], "int8");
  EXPECT_EQ(j["settings"]["prefill_chunk"], 2048);
  EXPECT_EQ(j["settings"]["max_context"], 196608);
  EXPECT_EQ(j["settings"]["prefix_reuse"], false);
  EXPECT_EQ(j["settings"]["tp"], 2);
  EXPECT_FALSE(j.contains("error"));

  RequestRecord plain = rec;
  plain.result.spec.reset();
  plain.result.completion_tokens = 1;
  plain.result.timings.decode_s = 0;
  json p = jsonl_record(plain);
  EXPECT_FALSE(p.contains("spec"));  // only when speculating
  EXPECT_TRUE(p["decode_tok_s"].is_null());

  RequestRecord failed = rec;
  failed.result = result_with(StopReason::kError);
  failed.result.error = "CUDA error";
  EXPECT_EQ(jsonl_record(failed)["error"], "CUDA error");
  EXPECT_EQ(jsonl_record(failed)["stop_reason"], "error");
}

TEST(JsonlWriter, AppendsOneFlushedLinePerRecordFromManyThreads) {
  fs::path p = temp_file("log.jsonl");
  {
    std::ofstream pre(p);
    pre << "{\"existing\":true}\n";
  }
  {
    JsonlWriter w(p.string());
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&w, t] {
        for (int i = 0; i < 50; ++i) w.write(json{{"t", t}, {"i", i}, {"text", "line\nbreak"}});
      });
    for (auto& th : threads) th.join();
    w.flush();
    EXPECT_EQ(w.lines_written(), 200u);
    EXPECT_EQ(w.write_errors(), 0u);
    // flushed: another reader sees every line while the writer is still open
    EXPECT_EQ(read_lines(p).size(), 201u);
  }
  std::vector<std::string> lines = read_lines(p);
  ASSERT_EQ(lines.size(), 201u);  // appended, not truncated
  std::map<int, int> per_thread;
  for (size_t i = 1; i < lines.size(); ++i) {
    json j = json::parse(lines[i]);
    per_thread[j["t"].get<int>()]++;
  }
  for (int t = 0; t < 4; ++t) EXPECT_EQ(per_thread[t], 50);
}

TEST(JsonlWriter, DestructorWritesWhatIsQueued) {
  fs::path p = temp_file("drain.jsonl");
  {
    JsonlWriter w(p.string());
    for (int i = 0; i < 100; ++i) w.write(json{{"i", i}});
  }
  EXPECT_EQ(read_lines(p).size(), 100u);
}

TEST(JsonlWriter, UnopenablePathNamesTheFlag) {
  try {
    JsonlWriter w("/nonexistent-dir-ninfer/x.jsonl");
    FAIL() << "opened an impossible path";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("--log-jsonl"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir-ninfer/x.jsonl"), std::string::npos) << e.what();
  }
}

double sample_value(const std::string& text, const std::string& series) {
  std::regex re("^" + std::regex_replace(series, std::regex(R"([\{\}\[\]\.\+\*\?\(\)\|\^\$\\])"), R"(\$&)") +
                " ([0-9eE.+-]+)$");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, re)) return std::stod(m[1]);
  }
  ADD_FAILURE() << "series not found: " << series;
  return -1;
}

TEST(Metrics, PrometheusTextWithVllmNames) {
  ServerMetrics m;
  FinalResult a = result_with(StopReason::kEos);
  a.spec = SpecStats{"mtp", 3, 10, 30, 20, {9, 7, 4}};
  m.record_finished(a);
  m.record_finished(result_with(StopReason::kOutputLimit));
  m.record_finished(result_with(StopReason::kCancelled));
  m.record_token_gap(0.02);
  m.record_token_gap(0.5);
  m.record_http_status(200);
  m.record_http_status(429);
  m.record_rejected();
  EngineLoad load{3, 2, 25, 100, 40, 6, 30, 17};
  std::string t = m.render("qw\"en", load, 5);
  const std::string ml = "model_name=\"qw\\\"en\"";
  EXPECT_EQ(sample_value(t, "vllm:request_success_total{finished_reason=\"stop\"," + ml + "}"), 1);
  EXPECT_EQ(sample_value(t, "vllm:request_success_total{finished_reason=\"length\"," + ml + "}"), 1);
  EXPECT_EQ(sample_value(t, "vllm:request_success_total{finished_reason=\"abort\"," + ml + "}"), 1);
  EXPECT_EQ(sample_value(t, "vllm:request_success_total{finished_reason=\"error\"," + ml + "}"), 0);
  EXPECT_EQ(sample_value(t, "vllm:prompt_tokens_total{" + ml + "}"), 3 * 48056);
  EXPECT_EQ(sample_value(t, "vllm:generation_tokens_total{" + ml + "}"), 3 * 2560);
  EXPECT_EQ(sample_value(t, "vllm:time_to_first_token_seconds_count{" + ml + "}"), 3);
  EXPECT_EQ(sample_value(t, "vllm:time_to_first_token_seconds_bucket{le=\"40\"," + ml + "}"), 0);
  EXPECT_EQ(sample_value(t, "vllm:time_to_first_token_seconds_bucket{le=\"80\"," + ml + "}"), 3);
  EXPECT_EQ(sample_value(t, "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"," + ml + "}"), 3);
  EXPECT_NEAR(sample_value(t, "vllm:e2e_request_latency_seconds_sum{" + ml + "}"), 3 * 74.5, 1e-6);
  EXPECT_EQ(sample_value(t, "vllm:inter_token_latency_seconds_count{" + ml + "}"), 2);
  EXPECT_EQ(sample_value(t, "vllm:inter_token_latency_seconds_bucket{le=\"0.025\"," + ml + "}"), 1);
  EXPECT_EQ(sample_value(t, "vllm:num_requests_waiting{" + ml + "}"), 3);
  EXPECT_EQ(sample_value(t, "ninfer:prefix_cache_blocks{" + ml + "}"), 40);
  EXPECT_EQ(sample_value(t, "ninfer:prefix_cache_snapshots{" + ml + "}"), 6);
  EXPECT_EQ(sample_value(t, "ninfer:kv_blocks_allocated{" + ml + "}"), 30);
  EXPECT_EQ(sample_value(t, "ninfer:constrained_steps_passed_over_total{" + ml + "}"), 17);
  EXPECT_EQ(sample_value(t, "vllm:num_requests_running{" + ml + "}"), 2);
  EXPECT_DOUBLE_EQ(sample_value(t, "vllm:kv_cache_usage_perc{" + ml + "}"), 0.25);
  EXPECT_EQ(sample_value(t, "ninfer:kv_blocks_used{" + ml + "}"), 25);
  EXPECT_EQ(sample_value(t, "ninfer:kv_blocks_total{" + ml + "}"), 100);
  EXPECT_EQ(sample_value(t, "ninfer:http_requests_in_flight{" + ml + "}"), 5);
  EXPECT_EQ(sample_value(t, "vllm:spec_decode_num_drafts_total{" + ml + "}"), 10);
  EXPECT_EQ(sample_value(t, "vllm:spec_decode_num_draft_tokens_total{" + ml + "}"), 30);
  EXPECT_EQ(sample_value(t, "vllm:spec_decode_num_accepted_tokens_total{" + ml + "}"), 20);
  EXPECT_EQ(sample_value(t, "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"2\"," + ml + "}"), 4);
  EXPECT_EQ(sample_value(t, "ninfer:http_responses_total{code=\"429\"," + ml + "}"), 1);
  EXPECT_EQ(sample_value(t, "ninfer:request_rejected_total{" + ml + "}"), 1);
  EXPECT_NE(t.find("# TYPE vllm:time_to_first_token_seconds histogram"), std::string::npos);
  EXPECT_NE(t.find("# TYPE vllm:num_requests_running gauge"), std::string::npos);
}

TEST(RequestStream, HandsDeltasAndOneFinalToTheWaiter) {
  auto metrics = std::make_shared<ServerMetrics>();
  int hook_calls = 0;
  bool hook_empty = false;
  auto s = std::make_shared<RequestStream>(1, metrics, [&](const std::vector<FinalResult>& r, const std::vector<bool>& empty,
                                                           double, const std::optional<SubmitResult>&) {
    hook_calls++;
    ASSERT_EQ(r.size(), 1u);
    hook_empty = empty[0];
    EXPECT_EQ(r[0].stop_reason, StopReason::kEos);
  });
  // nothing pending: wait times out empty
  auto t0 = std::chrono::steady_clock::now();
  RequestStream::Pending none = s->wait(std::chrono::milliseconds(30));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(25));
  EXPECT_TRUE(none.deltas.empty());
  EXPECT_TRUE(none.finals.empty());

  std::shared_ptr<GenerationSink> sink = s->sink(0);
  std::thread engine([&] {
    sink->on_delta({Channel::kReasoning, "r", 1, {}});
    sink->on_delta({Channel::kContent, "", 1, {}});
    sink->on_finish(FinalResult{});
    sink->on_delta({Channel::kContent, "late", 1, {}});  // ignored after the final
    sink->on_finish(FinalResult{});                      // ignored
  });
  std::vector<Delta> got;
  std::optional<FinalResult> final;
  while (!final) {
    auto p = s->wait(std::chrono::milliseconds(1000));
    for (auto& d : p.deltas) got.push_back(d.delta);
    if (!p.finals.empty()) final = p.finals[0].result;
  }
  engine.join();
  EXPECT_EQ(got.size(), 2u);
  EXPECT_EQ(hook_calls, 1);
  EXPECT_TRUE(hook_empty);  // no content text came
  EXPECT_TRUE(s->finished());
  EXPECT_TRUE(s->wait(std::chrono::milliseconds(1)).finals.empty());  // the final is handed out once

  auto s2 = std::make_shared<RequestStream>(1, nullptr, nullptr);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    s2->abort();
  });
  EXPECT_TRUE(s2->wait(std::chrono::milliseconds(5000)).aborted);
  aborter.join();
}

TEST(RequestStream, OneHookForAllChoicesOrForTheSubmittedOnes) {
  std::vector<FinalResult> seen;
  int calls = 0;
  auto s = std::make_shared<RequestStream>(3, nullptr, [&](const std::vector<FinalResult>& r, const std::vector<bool>& empty,
                                                           double request_s, const std::optional<SubmitResult>&) {
    EXPECT_GE(request_s, 0.0);
    calls++;
    seen = r;
    EXPECT_EQ(empty.size(), r.size());
  });
  FinalResult a, b;
  a.completion_tokens = 4;
  b.completion_tokens = 6;
  s->sink(1)->on_delta({Channel::kContent, "x", 1, {}});
  EXPECT_TRUE(s->started(1));
  EXPECT_FALSE(s->started(0));
  s->sink(1)->on_finish(b);
  s->sink(0)->on_finish(a);
  EXPECT_EQ(calls, 0);  // choice 2 still runs
  EXPECT_FALSE(s->finished());
  s->sink(2)->on_finish(a);
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[1].completion_tokens, 6);  // by index, not by arrival
  EXPECT_TRUE(s->finished());
  auto p = s->wait(std::chrono::milliseconds(1));
  EXPECT_EQ(p.deltas.size(), 1u);
  EXPECT_EQ(p.deltas[0].index, 1);
  EXPECT_EQ(p.finals.size(), 3u);

  // only 2 of 4 choices were submitted (the request was cancelled before the rest): the hook sees those 2
  auto t = std::make_shared<RequestStream>(4, nullptr, [&](const std::vector<FinalResult>& r, const std::vector<bool>&,
                                                           double, const std::optional<SubmitResult>&) {
    calls++;
    seen = r;
  });
  t->sink(0)->on_finish(a);
  t->close(2);
  EXPECT_EQ(calls, 1);
  t->sink(1)->on_finish(b);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_TRUE(t->finished());
}

TEST(MergeChoiceResults, PromptOnceTokensSummedWorstReason) {
  FinalResult a, b;
  a.prompt_tokens = b.prompt_tokens = 20;
  a.cached_tokens = 0;
  b.cached_tokens = 16;
  a.completion_tokens = 5;
  b.completion_tokens = 7;
  a.reasoning_tokens = 1;
  b.reasoning_tokens = 2;
  a.timings.ttft_s = 0.5;
  b.timings.ttft_s = 0.2;
  a.timings.total_s = 1;
  b.timings.total_s = 3;
  b.stop_reason = StopReason::kOutputLimit;
  FinalResult m = merge_choice_results({a, b});
  EXPECT_EQ(m.prompt_tokens, 20);
  EXPECT_EQ(m.cached_tokens, 0);
  EXPECT_EQ(m.completion_tokens, 12);
  EXPECT_EQ(m.reasoning_tokens, 3);
  EXPECT_DOUBLE_EQ(m.timings.ttft_s, 0.5);  // choice 0's: the request's first token
  EXPECT_DOUBLE_EQ(m.timings.total_s, 3);
  EXPECT_DOUBLE_EQ(merge_choice_results({a, b}, 4.5).timings.total_s, 4.5);  // the request's wall time
  EXPECT_EQ(m.stop_reason, StopReason::kEos);  // choice 0's
  b.stop_reason = StopReason::kError;
  b.error = "boom";
  m = merge_choice_results({a, b});
  EXPECT_EQ(m.stop_reason, StopReason::kError);
  EXPECT_EQ(m.error, "boom");
}

}  // namespace
}  // namespace ninfer::server
