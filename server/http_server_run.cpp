// The app's entry to the HTTP layer: ninfer-serve's flags as the server's configuration, and serving until a stop
// signal, then draining (declared in server/http_server.h).
#include <atomic>
#include <chrono>
#include <csignal>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server/http_server.h"
#include "server/serve_options.h"

namespace ninfer::server {

HttpServerConfig http_config_from(const ServeOptions& o) {
  HttpServerConfig c;
  c.host = o.host;
  c.port = o.port;
  c.api_keys = o.api_keys;
  c.cors_origins = o.cors_origins;
  c.served_model_name = o.served_model_name;
  c.max_in_flight = std::max(64, 8 * o.max_concurrency);  // >= 64 >= --max-n: one request always fits
  c.max_n = o.max_n;
  c.force_greedy = o.greedy;
  c.reasoning_budget = o.reasoning_budget;
  c.log_jsonl_path = o.log_jsonl;
  c.connections.max_connections = o.max_connections;
  c.connections.max_connections_per_client = o.max_connections_per_client;
  c.connections.keep_alive_timeout = std::chrono::seconds(o.keep_alive_timeout_s);
  c.connections.read_timeout = std::chrono::seconds(o.read_timeout_s);
  return c;
}

namespace {
std::atomic<int> g_signal{0};
extern "C" void on_stop_signal(int sig) { g_signal = sig; }
}  // namespace

void request_run_server_stop() { g_signal = SIGTERM; }

int run_server(const ServeOptions& options, EnginePort& engine) {
  std::unique_ptr<HttpServer> server;
  try {
    server = std::make_unique<HttpServer>(http_config_from(options), engine);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());  // the --log-jsonl path: a bad flag value
    return 2;
  }
  g_signal = 0;
  auto prev_int = std::signal(SIGINT, on_stop_signal);
  auto prev_term = std::signal(SIGTERM, on_stop_signal);
  auto restore = [&] {
    std::signal(SIGINT, prev_int);
    std::signal(SIGTERM, prev_term);
  };
  try {
    server->start();
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    restore();
    return 1;
  }
  spdlog::info("listening on {} ({}){}", server->address(), engine.ready() ? "ready" : "loading: /health answers 503",
               options.api_keys.empty() ? "" : ", API key required on /v1/*");
  if (!options.log_jsonl.empty()) spdlog::info("request timings: one JSON line per request in {}", options.log_jsonl);
  bool ready_logged = engine.ready();
  while (g_signal == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!ready_logged && engine.ready()) {
      ModelInfo info = engine.model_info();
      spdlog::info("model ready: serving '{}' (max context {} tokens)",
                   options.served_model_name.empty() ? info.name : options.served_model_name, info.max_context);
      ready_logged = true;
    }
  }
  const int first = g_signal.exchange(0);
  const int64_t busy = server->in_flight();
  if (busy > 0 && options.drain_timeout_s > 0) {
    spdlog::info("signal {}: draining {} request(s) in flight for up to {} s (new requests get 503; signal again "
                 "to stop now)", first, busy, options.drain_timeout_s);
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t left = server->drain(std::chrono::seconds(options.drain_timeout_s), [] { return g_signal != 0; });
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (left == 0) spdlog::info("drained in {:.1f} s", waited);
    else spdlog::warn("{} request(s) still in flight after {:.1f} s{}: cancelling them", left, waited,
                      g_signal != 0 ? " (second signal)" : "");
  } else {
    spdlog::info("signal {}: stopping{}", first, busy > 0 ? fmt::format(", cancelling {} request(s)", busy) : "");
  }
  server->stop();
  spdlog::info("stopped");
  restore();
  return 0;
}

}  // namespace ninfer::server
