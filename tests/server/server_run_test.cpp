// Tests of run_server(): the app's entry point serves until a stop request or signal, and its exit codes.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include <httplib.h>

#include "server/http_server.h"
#include "server/serve_options.h"
#include "tests/server/fake_engine.h"

namespace ninfer::server::testing {
namespace {

// A port that was free a moment ago: bound by a throwaway server, then released.
int free_port() {
  httplib::Server probe;
  int port = probe.bind_to_any_port("127.0.0.1");
  std::thread t([&] { probe.listen_after_bind(); });
  while (!probe.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  probe.stop();
  t.join();
  return port;
}

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
