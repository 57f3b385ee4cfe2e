// Owns the soak run's checks and plumbing: the malformed requests with their expected answers, the server
// process (start, readiness, exit), its resident memory, the gauges after the run, and the JSONL audit.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ninfer::soak {

// A malformed request and the exact answer the server owes it.
struct BadCase {
  std::string name;
  std::string path;
  std::string body;
  int status;
  std::string code;
};
const std::vector<BadCase>& bad_cases();

// Named pass/fail results, in order.
struct Checks {
  bool ok = true;
  std::vector<nlohmann::json> results;
  void expect(bool pass, const std::string& what);  // also logs it
};

int free_port();
std::pair<std::string, int> host_port(const std::string& url);  // http://host:port
pid_t spawn(const std::string& binary, const std::vector<std::string>& args, const std::string& log);
// Polls /health until 200 (false when `pid` > 0 exits first, or after `timeout`).
bool wait_ready(const std::string& host, int port, pid_t pid, std::chrono::seconds timeout);
// The exit status of `pid` (128 + signal when killed; -1 after `timeout`, when it is killed).
int wait_exit(pid_t pid, std::chrono::seconds timeout);
double resident_mib(pid_t pid);  // VmRSS from /proc (0 when unreadable)

struct RssSummary {
  double first_mib = 0, last_mib = 0, peak_mib = 0, growth_mib = 0;
};
// First fifth vs last fifth of the samples (seconds, MiB): the largest of each (the first fifth includes the
// warm-up's allocations), growth = last − first.
RssSummary summarize_rss(const std::vector<std::pair<double, double>>& samples);

// Polls /metrics until nothing is in flight, running or waiting, no KV block is committed to a sequence and the
// blocks off the free list are the prefix cache's, or `timeout`; returns the gauges read last with "settled".
nlohmann::json settled_gauges(const std::string& host, int port, std::chrono::seconds timeout);

struct JsonlSummary {
  uint64_t lines = 0;
  uint64_t missing = 0;     // ids a client saw admitted without a line
  uint64_t duplicates = 0;  // ids with more than one line
  uint64_t unseen = 0;      // lines of requests no client saw admitted (hang-ups before the answer, refusals)
  std::map<std::string, uint64_t> stop_reasons;
};
JsonlSummary check_jsonl(const std::string& path, const std::set<std::string>& seen_ids);

}  // namespace ninfer::soak
