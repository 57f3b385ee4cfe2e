// Owns the HTTP server: routes, authentication, limits, streaming, cancellation on disconnect.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/engine_port.h"
#include "server/http_connection.h"
#include "server/metrics.h"

namespace ninfer::server {

struct ServeOptions;

struct HttpServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;                          // 0: any free port (HttpServer::port() tells which)
  std::vector<std::string> api_keys;        // empty: no authentication
  std::string served_model_name;            // empty: ModelInfo::name
  size_t max_body_bytes = size_t{64} << 20; // larger bodies get 413
  int max_in_flight = 256;                  // choices served at once (a request of n takes n); more get 429
  int max_n = 16;                           // --max-n: choices per request (`n`); more get 400
  ConnectionLimits connections;             // connection limit and timeouts (docs/security.md)
  std::chrono::milliseconds sse_ping_interval{5000};  // SSE comment after this long without output
  std::chrono::milliseconds stop_grace{3000};         // stop(): wait this long for cancelled requests
  bool force_greedy = false;                // --greedy
  std::optional<int64_t> reasoning_budget;  // --reasoning-budget
  std::string log_jsonl_path;               // empty: no JSONL log
  std::vector<std::string> cors_origins;    // --cors-origin: browser origins that may read answers (server/cors.h)
};

// The server config the flags imply (host, port, keys, served name, greedy, budget, JSONL path, connection
// limits and timeouts; max_in_flight = max(64, 8 × --max-concurrency)).
HttpServerConfig http_config_from(const ServeOptions& options);

class HttpServer {
 public:
  // Opens the JSONL log when configured (throws ninfer::Error naming --log-jsonl on failure).
  HttpServer(HttpServerConfig config, EnginePort& engine);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving on a background thread; returns the bound port.
  // Throws ninfer::Error (kIo) when the address cannot be bound.
  int start();
  // Refuses new generation requests (503 server_stopping; /health answers 503 "draining") and waits until
  // the requests in flight have finished, `timeout` has passed or `interrupted()` returns true (polled every
  // 50 ms). Returns how many are still in flight. The server keeps answering; stop() ends it.
  int64_t drain(std::chrono::milliseconds timeout, const std::function<bool()>& interrupted = {});
  // Cancels in-flight requests (their JSONL lines are still written), stops listening, joins.
  void stop();

  int port() const;
  std::string address() const;  // http://host:port
  const ServerMetrics& metrics() const;
  int64_t in_flight() const;
  // Blocks until every queued JSONL line is on disk (no-op without a log).
  void flush_log();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What ninfer-serve's main calls after parsing the flags: serves `engine` (GET /health answers 503
// until engine.ready(), so the app may load the model on another thread meanwhile) until SIGINT or
// SIGTERM (or request_run_server_stop(); on Windows Ctrl-C / Ctrl-Break, and closing the console, logoff or
// shutdown, which stop it without the drain within the few seconds Windows allows). Then it drains (drain(): requests in flight finish, for at most
// --drain-timeout; a second signal cuts it short), cancels what is left, flushes the JSONL log and stops.
// Returns the process exit code: 0 after a stop request, 2 when the --log-jsonl file cannot be
// opened, 1 when the address cannot be bound (the reason is logged in each case).
int run_server(const ServeOptions& options, EnginePort& engine);

// Makes a running run_server() return, as SIGTERM does (thread-safe, async-signal-safe).
void request_run_server_stop();

#ifdef _WIN32
// run_server()'s console control handler (SetConsoleCtrlHandler), callable by tests as Windows calls it: Ctrl-C and
// Ctrl-Break stop with the drain; CTRL_CLOSE_EVENT, logoff and shutdown stop without it and return only once
// run_server() is done (at most 4.5 s). Returns whether the event was handled.
bool handle_console_event(unsigned long event);
#endif

}  // namespace ninfer::server
