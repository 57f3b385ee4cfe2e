// Tests of run_server(): the app's entry point serves until a stop request or signal, and its exit codes.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/http_server.h"
#include "server/serve_options.h"
#include "tests/server/fake_engine.h"
#include "tests/support/child_process.h"
#include "tests/support/test_files.h"

namespace ninfer::server::testing {
namespace {

using ::ninfer::testing::free_port;

bool wait_health(int port, int want_status) {
  for (int i = 0; i < 500; ++i) {
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(1, 0);
    auto r = c.Get("/health");
    if (r && r->status == want_status) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

ServeOptions options_on(int port) {
  ServeOptions o;
  o.model = "unused.ninfer";
  o.port = port;
  return o;
}

TEST(RunServer, ServesUntilAStopRequestAndWritesTheJsonl) {
  FakeEngine::Config ec;
  ec.ready = false;
  FakeEngine engine(ec);
  ServeOptions o = options_on(free_port());
  std::filesystem::path log = std::filesystem::temp_directory_path() / "ninfer_run_server_test.jsonl";
  std::filesystem::remove(log);
  o.log_jsonl = log.string();
  int rc = -1;
  std::thread t([&] { rc = run_server(o, engine); });
  ASSERT_TRUE(wait_health(o.port, 503));  // loading
  engine.set_ready(true);
  ASSERT_TRUE(wait_health(o.port, 200));
  httplib::Client c("127.0.0.1", o.port);
  auto r = c.Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}]})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  request_run_server_stop();
  t.join();
  EXPECT_EQ(rc, 0);
  std::ifstream in(log);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_NE(line.find("\"stop_reason\":\"eos\""), std::string::npos) << line;
}

TEST(RunServer, SigtermStopsIt) {
  FakeEngine engine;
  ServeOptions o = options_on(free_port());
  int rc = -1;
  std::thread t([&] { rc = run_server(o, engine); });
  ASSERT_TRUE(wait_health(o.port, 200));  // the handlers are installed before the port answers
  std::raise(SIGTERM);
  t.join();
  EXPECT_EQ(rc, 0);
}

// A request posted on its own thread; status and body once it is answered.
struct Posted {
  std::thread thread;
  int status = 0;
  std::string body;
  Posted(int port, std::string body_json) {
    thread = std::thread([this, port, b = std::move(body_json)] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(60, 0);
      auto r = c.Post("/v1/chat/completions", b, "application/json");
      if (r) status = r->status, body = r->body;
    });
  }
  ~Posted() {
    if (thread.joinable()) thread.join();
  }
};

std::string chat_body(const std::string& prompt, int max_tokens) {
  return nlohmann::json{{"messages", {{{"role", "user"}, {"content", prompt}}}}, {"max_tokens", max_tokens}}.dump();
}

bool wait_active(const FakeEngine& engine, int64_t n) {
  for (int i = 0; i < 500 && engine.active() != n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return engine.active() == n;
}

std::vector<nlohmann::json> jsonl_lines(const std::filesystem::path& path) {
  return ::ninfer::testing::read_jsonl(path.string());
}

// SIGTERM while a request is generating: it finishes (200, its whole output, its JSONL line); meanwhile
// /health says draining and new requests get 503 server_stopping; then run_server returns 0.
TEST(RunServer, SigtermDrainsTheRequestsInFlight) {
  FakeEngine::Config ec;
  ec.step = std::chrono::milliseconds(20);  // 40 tokens: 0.8 s
  FakeEngine engine(ec);
  ServeOptions o = options_on(free_port());
  std::filesystem::path log = std::filesystem::temp_directory_path() / "ninfer_run_server_drain.jsonl";
  std::filesystem::remove(log);
  o.log_jsonl = log.string();
  int rc = -1;
  std::thread t([&] { rc = run_server(o, engine); });
  ASSERT_TRUE(wait_health(o.port, 200));
  {
    Posted inflight(o.port, chat_body("__endless__ write", 40));
    ASSERT_TRUE(wait_active(engine, 1));
    const auto t0 = std::chrono::steady_clock::now();
    std::raise(SIGTERM);
    ASSERT_TRUE(wait_health(o.port, 503));
    httplib::Client c("127.0.0.1", o.port);
    auto h = c.Get("/health");
    ASSERT_TRUE(h);
    EXPECT_EQ(nlohmann::json::parse(h->body)["status"], "draining") << h->body;
    auto late = c.Post("/v1/chat/completions", chat_body("hello", 5), "application/json");
    ASSERT_TRUE(late);
    EXPECT_EQ(late->status, 503);
    EXPECT_EQ(nlohmann::json::parse(late->body)["error"]["code"], "server_stopping") << late->body;
    inflight.thread.join();
    EXPECT_EQ(inflight.status, 200) << inflight.body;
    EXPECT_EQ(nlohmann::json::parse(inflight.body)["choices"][0]["finish_reason"], "length");
    t.join();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  }
  EXPECT_EQ(rc, 0);
  std::vector<nlohmann::json> lines = jsonl_lines(log);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["stop_reason"], "output_limit") << lines[0].dump();
}

// A request that outlasts --drain-timeout is cancelled when it runs out (503, JSONL line "cancelled").
TEST(RunServer, DrainTimeoutCancelsWhatIsLeft) {
  FakeEngine engine;
  ServeOptions o = options_on(free_port());
  o.drain_timeout_s = 1;
  std::filesystem::path log = std::filesystem::temp_directory_path() / "ninfer_run_server_drain_timeout.jsonl";
  std::filesystem::remove(log);
  o.log_jsonl = log.string();
  int rc = -1;
  std::thread t([&] { rc = run_server(o, engine); });
  ASSERT_TRUE(wait_health(o.port, 200));
  const auto t0 = std::chrono::steady_clock::now();
  {
    Posted stuck(o.port, chat_body("__silent__", 10));
    ASSERT_TRUE(wait_active(engine, 1));
    std::raise(SIGTERM);
    t.join();
    stuck.thread.join();
    EXPECT_EQ(stuck.status, 503) << stuck.body;
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(took, 0.9);
  EXPECT_LT(took, 6.0);
  EXPECT_EQ(rc, 0);
  std::vector<nlohmann::json> lines = jsonl_lines(log);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["stop_reason"], "cancelled") << lines[0].dump();
}

// A second signal during the drain stops at once.
TEST(RunServer, ASecondSignalEndsTheDrain) {
  FakeEngine engine;
  ServeOptions o = options_on(free_port());
  o.drain_timeout_s = 600;
  int rc = -1;
  std::thread t([&] { rc = run_server(o, engine); });
  ASSERT_TRUE(wait_health(o.port, 200));
  Posted stuck(o.port, chat_body("__silent__", 10));
  ASSERT_TRUE(wait_active(engine, 1));
  const auto t0 = std::chrono::steady_clock::now();
  std::raise(SIGTERM);
  ASSERT_TRUE(wait_health(o.port, 503));
  std::raise(SIGINT);
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(6));
  EXPECT_EQ(rc, 0);
}

// --log-jsonl on a full disk (/dev/full: every write fails with ENOSPC): requests are served, the lost
// lines are counted in /metrics.
TEST(RunServer, AFullDiskForTheJsonlLogDoesNotStopServing) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  FakeEngine engine;
  ServeOptions o = options_on(free_port());
  o.log_jsonl = "/dev/full";
  int rc = -1;
  std::thread t([&] { rc = run_server(o, engine); });
  ASSERT_TRUE(wait_health(o.port, 200));
  httplib::Client c("127.0.0.1", o.port);
  for (int i = 0; i < 3; ++i) {
    auto r = c.Post("/v1/chat/completions", chat_body("hello there", 8), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  }
  std::string metrics;
  for (int i = 0; i < 200; ++i) {  // the writer thread counts the lost lines a moment after the answers
    auto m = c.Get("/metrics");
    ASSERT_TRUE(m);
    metrics = m->body;
    if (metrics.find("ninfer:jsonl_write_errors_total{model_name=\"fake-model\"} 3") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(metrics.find("ninfer:jsonl_write_errors_total{model_name=\"fake-model\"} 3"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("ninfer:jsonl_lines_written_total{model_name=\"fake-model\"} 0"), std::string::npos);
  request_run_server_stop();
  t.join();
  EXPECT_EQ(rc, 0);
}

TEST(RunServer, ExitCodes) {
  FakeEngine engine;
  // the address is taken: 1
  httplib::Server taken;
  int port = taken.bind_to_any_port("127.0.0.1");
  std::thread holder([&] { taken.listen_after_bind(); });
  while (!taken.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // stop() needs it
  EXPECT_EQ(run_server(options_on(port), engine), 1);
  taken.stop();
  holder.join();
  // the --log-jsonl path cannot be opened: 2, as for any bad flag value
  ServeOptions bad = options_on(free_port());
  bad.log_jsonl = "/nonexistent-dir-ninfer/run.jsonl";
  EXPECT_EQ(run_server(bad, engine), 2);
}

}  // namespace
}  // namespace ninfer::server::testing
