// ninfer-soak: holds N concurrent clients against ninfer-serve for a while — streaming and plain chat requests,
// clients that hang up in the middle, malformed requests with their exact expected answers — while it watches
// the server: /health latency, resident memory, and at the end the gauges (nothing in flight, KV blocks only
// what the prefix cache holds) and the JSONL log (one line per request the server admitted). Exit 0 when
// every check holds. docs/benchmarks.md "Soak" has the 10-minute run; ctest runs a 60 s one (label soak).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/soak/soak_checks.h"

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using ninfer::soak::BadCase;

struct Options {
  std::string url;               // a running server; empty: start the build's ninfer-serve
  std::string serve_binary;      // --serve-binary
  std::vector<std::string> serve_args;
  std::string jsonl;             // with --url: the server's --log-jsonl file, to check
  int clients = 64;
  double duration_s = 600;
  double disconnect_rate = 0.1;
  double bad_rate = 0.1;
  double stream_rate = 0.7;
  int max_tokens = 48;
  uint64_t seed = 1;
  double rss_growth_mib = 32;    // allowed resident-memory growth between the first and the last fifth
  double health_limit_s = 1.0;   // slowest /health answer allowed
  std::string report;            // JSON report path
};

// What the clients did, summed over all of them.
struct Tally {
  std::mutex mu;
  std::map<std::string, uint64_t> counts;  // outcome → requests
  std::vector<std::string> failures;       // the first unintended failures, described
  std::set<std::string> seen_ids;          // X-Request-Id of every admitted request the client saw
  uint64_t tokens = 0;

  void add(const std::string& outcome) {
    std::lock_guard lock(mu);
    counts[outcome]++;
  }
  void fail(const std::string& what) {
    std::lock_guard lock(mu);
    counts["failed"]++;
    if (failures.size() < 20) failures.push_back(what);
  }
  void seen(const std::string& id) {
    std::lock_guard lock(mu);
    if (!id.empty()) seen_ids.insert(id);
  }
};

const std::vector<std::string> kWords = {"queue", "cache", "kernel", "tensor", "thread", "socket", "buffer",
                                         "stream", "token", "layer", "graph", "block", "vector", "parser"};

std::string random_prompt(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> len(3, 40), word(0, static_cast<int>(kWords.size()) - 1);
  std::string p = "Explain";
  for (int i = len(rng); i > 0; --i) p += " " + kWords[static_cast<size_t>(word(rng))];
  return p;
}

class Soak {
 public:
  Soak(Options o, std::string host, int port) : o_(std::move(o)), host_(std::move(host)), port_(port) {}

  void client(int index) {
    std::mt19937_64 rng(o_.seed * 1000003 + static_cast<uint64_t>(index));
    std::uniform_real_distribution<double> u(0, 1);
    const std::vector<BadCase>& bad = ninfer::soak::bad_cases();
    while (Clock::now() < end_) {
      const double r = u(rng);
      if (r < o_.bad_rate) {
        send_bad(bad[std::uniform_int_distribution<size_t>(0, bad.size() - 1)(rng)]);
      } else {
        const bool stream = u(rng) < o_.stream_rate;
        const bool hang_up = u(rng) < o_.disconnect_rate;
        json body = {{"messages", {{{"role", "user"}, {"content", random_prompt(rng)}}}},
                     {"max_tokens", std::uniform_int_distribution<int>(1, o_.max_tokens)(rng)},
                     {"temperature", u(rng) < 0.5 ? 0.0 : 0.8},
                     {"seed", static_cast<int64_t>(rng() >> 33)},
                     {"stream", stream}};
        if (u(rng) < 0.5) body["reasoning_effort"] = "none";
        if (stream) send_stream(body, hang_up ? std::uniform_int_distribution<int>(1, 6)(rng) : -1);
        else send_plain(body, hang_up);
      }
    }
  }

  // GET /health every 200 ms on a fresh connection; the slowest answer is a check.
  void health_watch() {
    while (Clock::now() < end_) {
      httplib::Client c(host_, port_);
      c.set_connection_timeout(5, 0);
      c.set_read_timeout(5, 0);
      const auto t0 = Clock::now();
      auto r = c.Get("/health");
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      {
        std::lock_guard lock(health_mu_);
        health_max_s_ = std::max(health_max_s_, s);
        health_n_++;
        if (!r || r->status != 200) health_errors_++;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  void run(pid_t server_pid) {
    start_ = Clock::now();
    end_ = start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.duration_s));
    std::vector<std::thread> threads;
    for (int i = 0; i < o_.clients; ++i) threads.emplace_back([this, i] { client(i); });
    threads.emplace_back([this] { health_watch(); });
    double next_report = 0;
    while (Clock::now() < end_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      const double t = std::chrono::duration<double>(Clock::now() - start_).count();
      if (server_pid > 0) rss_.push_back({t, ninfer::soak::resident_mib(server_pid)});
      if (t >= next_report) {
        next_report += 10;
        std::lock_guard lock(tally_.mu);
        spdlog::info("soak {:4.0f}/{:.0f} s: ok {} hung up {} bad {} queue_full {} failed {} tokens {}{}", t,
                     o_.duration_s, tally_.counts["ok"], tally_.counts["hung_up"], tally_.counts["bad_as_expected"],
                     tally_.counts["queue_full"], tally_.counts["failed"], tally_.tokens,
                     rss_.empty() ? "" : fmt::format(" rss {:.1f} MiB", rss_.back().second));
      }
    }
    for (auto& t : threads) t.join();
  }

  Tally& tally() { return tally_; }
  const std::vector<std::pair<double, double>>& rss() const { return rss_; }
  double health_max_s() const { return health_max_s_; }
  uint64_t health_n() const { return health_n_; }
  uint64_t health_errors() const { return health_errors_; }

 private:
  httplib::Client client_for(int read_timeout_s) const {
    httplib::Client c(host_, port_);
    c.set_connection_timeout(10, 0);
    c.set_read_timeout(read_timeout_s, 0);
    return c;
  }

  // 429: the server is at its --max-concurrency-derived limit (hang-ups still being cancelled count). A client
  // backs off, as the OpenAI SDKs do.
  void queue_full() {
    tally_.add("queue_full");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }

  void send_bad(const BadCase& b) {
    httplib::Client c = client_for(60);
    auto r = c.Post(b.path, b.body, "application/json");
    if (!r) return tally_.fail(fmt::format("bad case '{}': no answer ({})", b.name, httplib::to_string(r.error())));
    std::string code;
    try {
      code = json::parse(r->body)["error"]["code"].get<std::string>();
    } catch (const std::exception&) {
      code = "<no error code>";
    }
    if (r->status == b.status && code == b.code) return tally_.add("bad_as_expected");
    if (r->status == 429) return queue_full();  // refused for capacity before its checks ran
    tally_.fail(fmt::format("bad case '{}': {} {} instead of {} {}: {}", b.name, r->status, code, b.status, b.code,
                            r->body.substr(0, 200)));
  }

  // A plain request; `hang_up`: give up after 50 ms (the server notices and cancels it).
  void send_plain(const json& body, bool hang_up) {
    httplib::Client c(host_, port_);
    c.set_connection_timeout(10, 0);
    if (hang_up) c.set_read_timeout(0, 50 * 1000);
    else c.set_read_timeout(120, 0);
    auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
    if (!r) {
      if (hang_up) return tally_.add("hung_up");
      return tally_.fail(fmt::format("plain request: no answer ({})", httplib::to_string(r.error())));
    }
    tally_.seen(r->get_header_value("X-Request-Id"));
    if (r->status == 429) return queue_full();
    if (r->status != 200) return tally_.fail(fmt::format("plain request: {} {}", r->status, r->body.substr(0, 200)));
    try {
      json j = json::parse(r->body);
      const std::string finish = j["choices"][0]["finish_reason"];
      if (finish != "stop" && finish != "length") return tally_.fail("plain request: finish_reason " + finish);
      std::lock_guard lock(tally_.mu);
      tally_.tokens += j["usage"]["completion_tokens"].get<uint64_t>();
    } catch (const std::exception& e) {
      return tally_.fail(std::string("plain request: unreadable answer: ") + e.what());
    }
    tally_.add(hang_up ? "answered_before_hang_up" : "ok");
  }

  // A streamed request; `hang_up_after` >= 0: close the connection after that many events.
  void send_stream(const json& body, int hang_up_after) {
    httplib::Client c = client_for(120);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/chat/completions";
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    int status = 0;
    std::string id, pending, finish, error;
    int events = 0;
    bool done = false;
    uint64_t tokens = 0;
    req.response_handler = [&](const httplib::Response& r) {
      status = r.status;
      id = r.get_header_value("X-Request-Id");
      return true;
    };
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      pending.append(data, n);
      for (size_t end; (end = pending.find("\n\n")) != std::string::npos;) {
        const std::string block = pending.substr(0, end);
        pending.erase(0, end + 2);
        if (block.rfind("data: ", 0) != 0) continue;  // SSE comments (keep-alive)
        const std::string payload = block.substr(6);
        if (payload == "[DONE]") {
          done = true;
          continue;
        }
        ++events;
        try {
          json e = json::parse(payload);
          if (e.contains("error")) error = e["error"].dump();
          else if (!e["choices"].empty()) {
            if (e["choices"][0]["finish_reason"].is_string()) finish = e["choices"][0]["finish_reason"];
            if (e["choices"][0]["delta"].contains("content") || e["choices"][0]["delta"].contains("reasoning_content"))
              ++tokens;
          }
        } catch (const std::exception& ex) {
          error = std::string("unreadable event: ") + ex.what();
        }
      }
      return hang_up_after < 0 || events < hang_up_after;
    };
    auto res = c.send(req);
    tally_.seen(id);
    if (status == 429) return queue_full();
    if (status != 200) return tally_.fail(fmt::format("stream: status {} ({})", status, httplib::to_string(res.error())));
    if (!error.empty()) return tally_.fail("stream: error event " + error.substr(0, 200));
    {
      std::lock_guard lock(tally_.mu);
      tally_.tokens += tokens;
    }
    if (hang_up_after >= 0 && !res) return tally_.add("hung_up");  // the client closed it (maybe after [DONE])
    if (!res) return tally_.fail(fmt::format("stream: broken ({})", httplib::to_string(res.error())));
    if (!done || (finish != "stop" && finish != "length"))
      return tally_.fail(fmt::format("stream: ended without [DONE] or finish_reason ({})", finish));
    tally_.add(hang_up_after >= 0 ? "answered_before_hang_up" : "ok");
  }

  Options o_;
  std::string host_;
  int port_;
  Clock::time_point start_, end_;
  Tally tally_;
  std::vector<std::pair<double, double>> rss_;  // (seconds, MiB)
  std::mutex health_mu_;
  double health_max_s_ = 0;
  uint64_t health_n_ = 0, health_errors_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.serve_binary = std::string(NINFER_BINARY_DIR) + "/apps/ninfer-serve";
  CLI::App app{"ninfer-soak: concurrent clients, hang-ups and bad requests against ninfer-serve, with checks"};
  app.add_option("--url", o.url, "A running server (http://host:port); unset: start --serve-binary with the "
                                 "arguments after --");
  app.add_option("--serve-binary", o.serve_binary, "The ninfer-serve to start")->capture_default_str();
  app.add_option("--jsonl", o.jsonl, "With --url: the server's --log-jsonl file (checked after the run)");
  app.add_option("--clients", o.clients, "Concurrent clients")->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--duration", o.duration_s, "Seconds of load")->capture_default_str()->check(CLI::Range(1.0, 1e6));
  app.add_option("--disconnect-rate", o.disconnect_rate, "Share of requests whose client hangs up")
      ->capture_default_str()->check(CLI::Range(0.0, 1.0));
  app.add_option("--bad-rate", o.bad_rate, "Share of malformed requests")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  app.add_option("--stream-rate", o.stream_rate, "Share of streamed requests")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  app.add_option("--max-tokens", o.max_tokens, "max_tokens drawn from 1..this")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_option("--seed", o.seed, "Seed of the clients' choices")->capture_default_str();
  app.add_option("--rss-growth-mib", o.rss_growth_mib, "Allowed growth of the server's resident memory (MiB) "
                 "from the first fifth of the run to the last")->capture_default_str();
  app.add_option("--health-limit", o.health_limit_s, "Slowest /health answer allowed (s)")->capture_default_str();
  app.add_option("--report", o.report, "Write the results as JSON here");
  app.add_option("serve_args", o.serve_args, "Arguments for the started ninfer-serve (after --)");
  CLI11_PARSE(app, argc, argv);

  std::string host = "127.0.0.1";
  int port = 0;
  pid_t pid = -1;
  std::filesystem::path tmp;
  std::string jsonl = o.jsonl;
  if (o.url.empty()) {
    tmp = std::filesystem::temp_directory_path() / fmt::format("ninfer-soak-{}", getpid());
    std::filesystem::create_directories(tmp);
    jsonl = (tmp / "soak.jsonl").string();
    port = ninfer::soak::free_port();
    std::vector<std::string> args = {"--port", std::to_string(port), "--log-jsonl", jsonl};
    args.insert(args.end(), o.serve_args.begin(), o.serve_args.end());
    pid = ninfer::soak::spawn(o.serve_binary, args, (tmp / "serve.log").string());
    spdlog::info("started {} (pid {}), log {}", o.serve_binary, pid, (tmp / "serve.log").string());
  } else {
    auto [h, p] = ninfer::soak::host_port(o.url);
    host = h, port = p;
  }
  if (!ninfer::soak::wait_ready(host, port, pid, std::chrono::seconds(120))) {
    spdlog::error("the server at {}:{} did not answer /health with 200", host, port);
    if (pid > 0) kill(pid, SIGKILL), waitpid(pid, nullptr, 0);
    return 1;
  }
  Soak soak(o, host, port);
  spdlog::info("soak: {} clients for {:.0f} s (hang-ups {:.0f}%, bad requests {:.0f}%, streamed {:.0f}%)", o.clients,
               o.duration_s, 100 * o.disconnect_rate, 100 * o.bad_rate, 100 * o.stream_rate);
  soak.run(pid);

  ninfer::soak::Checks checks;
  Tally& t = soak.tally();
  checks.expect(t.counts["failed"] == 0, fmt::format("unintended failures: {}", t.counts["failed"]));
  for (const std::string& f : t.failures) spdlog::error("  {}", f);
  checks.expect(soak.health_errors() == 0 && soak.health_max_s() <= o.health_limit_s,
                fmt::format("/health: {} probes, slowest {:.3f} s (limit {:.1f} s), {} not 200", soak.health_n(),
                            soak.health_max_s(), o.health_limit_s, soak.health_errors()));
  const json gauges = ninfer::soak::settled_gauges(host, port, std::chrono::seconds(15));
  checks.expect(gauges.value("settled", false),
                fmt::format("after the run: gauges {} (want nothing in flight, running or waiting; KV blocks held "
                            "only by the prefix cache)", gauges.dump()));
  const ninfer::soak::RssSummary rss = ninfer::soak::summarize_rss(soak.rss());
  if (pid > 0)
    checks.expect(rss.growth_mib <= o.rss_growth_mib,
                  fmt::format("resident memory: {:.1f} MiB in the first fifth, {:.1f} MiB in the last (growth {:.1f} "
                              "MiB, allowed {:.1f}), peak {:.1f} MiB", rss.first_mib, rss.last_mib, rss.growth_mib,
                              o.rss_growth_mib, rss.peak_mib));
  int exit_status = -1;
  if (pid > 0) {
    kill(pid, SIGTERM);
    exit_status = ninfer::soak::wait_exit(pid, std::chrono::seconds(60));
    checks.expect(exit_status == 0, fmt::format("ninfer-serve exit status after SIGTERM: {}", exit_status));
  }
  ninfer::soak::JsonlSummary log;
  if (!jsonl.empty()) {
    uint64_t unseen_allowed = t.counts["hung_up"] + t.counts["bad_as_expected"];
    log = ninfer::soak::check_jsonl(jsonl, t.seen_ids);
    checks.expect(log.missing == 0 && log.duplicates == 0 && log.unseen <= unseen_allowed,
                  fmt::format("JSONL: {} lines, {} ids the clients saw; missing {}, duplicated {}, lines of requests "
                              "the clients never saw admitted {} (allowed {}: hang-ups and refusals)",
                              log.lines, t.seen_ids.size(), log.missing, log.duplicates, log.unseen, unseen_allowed));
  }

  json report = {{"clients", o.clients},
                 {"duration_s", o.duration_s},
                 {"outcomes", t.counts},
                 {"tokens", t.tokens},
                 {"failures", t.failures},
                 {"health", {{"probes", soak.health_n()}, {"max_s", soak.health_max_s()}, {"errors", soak.health_errors()}}},
                 {"rss_mib", {{"first", rss.first_mib}, {"last", rss.last_mib}, {"peak", rss.peak_mib},
                              {"growth", rss.growth_mib}}},
                 {"gauges_after", gauges},
                 {"jsonl", {{"lines", log.lines}, {"missing", log.missing}, {"duplicates", log.duplicates},
                            {"unseen", log.unseen}, {"stop_reasons", log.stop_reasons}}},
                 {"server_exit_status", exit_status},
                 {"checks", checks.results},
                 {"passed", checks.ok}};
  if (!o.report.empty()) std::ofstream(o.report) << report.dump(2) << "\n";
  std::printf("%s\n", report.dump(2).c_str());
  if (!tmp.empty() && checks.ok) std::filesystem::remove_all(tmp);
  spdlog::info("soak {}", checks.ok ? "passed" : "FAILED");
  return checks.ok ? 0 : 1;
}
