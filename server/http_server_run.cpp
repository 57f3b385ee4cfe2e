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

#ifdef _WIN32
#include <windows.h>
#endif

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
std::atomic<bool> g_no_drain{false};  // the console is closing: Windows ends the process a few seconds after the event
std::atomic<bool> g_running{false};   // run_server() is between installing and removing its handlers
extern "C" void on_stop_signal(int sig) { g_signal = sig; }

#ifdef _WIN32
BOOL WINAPI on_console_event(DWORD event) { return handle_console_event(event) ? TRUE : FALSE; }
#endif

// Installs the stop handlers for the life of run_server() and puts the previous ones back.
class StopHandlers {
 public:
  StopHandlers() {
    g_signal = 0;
    g_no_drain = false;
    prev_term_ = std::signal(SIGTERM, on_stop_signal);
#ifdef _WIN32
    SetConsoleCtrlHandler(on_console_event, TRUE);  // Ctrl-C and the console events; SIGINT is never raised
#else
    prev_int_ = std::signal(SIGINT, on_stop_signal);
#endif
    g_running = true;
  }
  ~StopHandlers() {
    g_running = false;
    std::signal(SIGTERM, prev_term_);
#ifdef _WIN32
    SetConsoleCtrlHandler(on_console_event, FALSE);
#else
    std::signal(SIGINT, prev_int_);
#endif
  }
  StopHandlers(const StopHandlers&) = delete;
  StopHandlers& operator=(const StopHandlers&) = delete;

 private:
  void (*prev_term_)(int) = SIG_DFL;
  void (*prev_int_)(int) = SIG_DFL;
};
}  // namespace

void request_run_server_stop() { g_signal = SIGTERM; }

#ifdef _WIN32
// Windows runs the handler on a thread of its own. Ctrl-C / Ctrl-Break stop the server as SIGINT does on POSIX (drain
// first). For the closing events Windows terminates the process once the handler returns (and after about 5 s
// regardless), so the handler asks for a stop without drain and waits until run_server() has stopped the server and
// flushed the JSONL log.
bool handle_console_event(unsigned long event) {
  switch (event) {
    case CTRL_C_EVENT: g_signal = SIGINT; return true;
    case CTRL_BREAK_EVENT: g_signal = SIGBREAK; return true;
    case CTRL_CLOSE_EVENT:
    case CTRL_LOGOFF_EVENT:
    case CTRL_SHUTDOWN_EVENT: {
      g_no_drain = true;
      g_signal = SIGTERM;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(4500);
      while (g_running && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return true;
    }
    default: return false;
  }
}
#endif

int run_server(const ServeOptions& options, EnginePort& engine) {
  std::unique_ptr<HttpServer> server;
  try {
    server = std::make_unique<HttpServer>(http_config_from(options), engine);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());  // the --log-jsonl path: a bad flag value
    return 2;
  }
  StopHandlers handlers;
  try {
    server->start();
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
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
  if (busy > 0 && options.drain_timeout_s > 0 && !g_no_drain) {
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
  server.reset();  // joins the JSONL writer: every line is in the file before a closing console ends the process
  spdlog::info("stopped");
  spdlog::default_logger_raw()->flush();
  return 0;
}

}  // namespace ninfer::server
