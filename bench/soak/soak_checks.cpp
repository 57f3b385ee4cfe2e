#include "bench/soak/soak_checks.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include <httplib.h>
#include <spdlog/spdlog.h>

namespace ninfer::soak {

const std::vector<BadCase>& bad_cases() {
  static const std::vector<BadCase> cases = [] {
    const std::string chat = "/v1/chat/completions", cmpl = "/v1/completions";
    auto with = [](const std::string& fields) {
      return R"({"messages":[{"role":"user","content":"hi"}],)" + fields + "}";
    };
    std::string stops = "[";
    for (int i = 0; i < 17; ++i) stops += (i ? ",\"s" : "\"s") + std::to_string(i) + "\"";
    stops += "]";
    return std::vector<BadCase>{
        {"truncated_json", chat, R"({"messages": [)", 400, "invalid_json"},
        {"invalid_utf8", chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"ab\xff" "cd\"}]}", 400, "invalid_json"},
        {"number_overflow", chat, with(R"("temperature":1e400)"), 400, "invalid_json"},
        {"body_number", chat, "42", 400, "invalid_type"},
        {"messages_empty", chat, R"({"messages":[]})", 400, "invalid_value"},
        {"role_unknown", chat, R"({"messages":[{"role":"wizard","content":"x"}]})", 400, "invalid_value"},
        {"model_unknown", chat, with(R"("model":"no-such-model")"), 404, "model_not_found"},
        {"max_tokens_past_context", chat, with(R"("max_tokens":1000000000)"), 400, "context_length_exceeded"},
        {"top_logprobs_too_many", chat, with(R"("logprobs":true,"top_logprobs":50)"), 400, "invalid_value"},
        {"too_many_stops", chat, with("\"stop\":" + stops), 400, "invalid_value"},
        {"prompt_id_out_of_vocab", cmpl, R"({"prompt":[1,2,999999999]})", 400, "invalid_value"},
        {"temperature_string", chat, with(R"("temperature":"hot")"), 400, "invalid_type"},
    };
  }();
  return cases;
}

void Checks::expect(bool pass, const std::string& what) {
  ok = ok && pass;
  results.push_back({{"pass", pass}, {"check", what}});
  if (pass) spdlog::info("ok    {}", what);
  else spdlog::error("FAIL  {}", what);
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

std::pair<std::string, int> host_port(const std::string& url) {
  std::string rest = url.rfind("http://", 0) == 0 ? url.substr(7) : url;
  rest = rest.substr(0, rest.find('/'));
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return {rest, 80};
  return {rest.substr(0, colon), std::stoi(rest.substr(colon + 1))};
}

pid_t spawn(const std::string& binary, const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(log.c_str(), "w", stderr)) _exit(126);
    dup2(fileno(stderr), fileno(stdout));
    std::vector<std::string> copy = args;
    std::vector<char*> argv{const_cast<char*>(binary.c_str())};
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

bool wait_ready(const std::string& host, int port, pid_t pid, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pid > 0 && waitpid(pid, nullptr, WNOHANG) != 0) return false;
    httplib::Client c(host, port);
    c.set_connection_timeout(1, 0);
    auto r = c.Get("/health");
    if (r && r->status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

int wait_exit(pid_t pid, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

double resident_mib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  return 0;
}

RssSummary summarize_rss(const std::vector<std::pair<double, double>>& samples) {
  RssSummary s;
  if (samples.empty()) return s;
  const size_t fifth = std::max<size_t>(1, samples.size() / 5);
  for (size_t i = 0; i < samples.size(); ++i) {
    s.peak_mib = std::max(s.peak_mib, samples[i].second);
    if (i < fifth) s.first_mib = std::max(s.first_mib, samples[i].second);
    if (i >= samples.size() - fifth) s.last_mib = std::max(s.last_mib, samples[i].second);
  }
  s.growth_mib = s.last_mib - s.first_mib;
  return s;
}

namespace {

// The value of an unlabelled-or-model-labelled gauge line "name{...} value" in a text exposition.
std::optional<double> gauge(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name, 0) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != '{' && next != ' ') continue;
    return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return std::nullopt;
}

}  // namespace

nlohmann::json settled_gauges(const std::string& host, int port, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  nlohmann::json g;
  for (;;) {
    httplib::Client c(host, port);
    c.set_read_timeout(5, 0);
    auto r = c.Get("/metrics");
    g = nlohmann::json::object();
    if (r && r->status == 200) {
      for (const char* name : {"ninfer:http_requests_in_flight", "vllm:num_requests_running",
                               "vllm:num_requests_waiting", "ninfer:kv_blocks_used", "ninfer:kv_blocks_allocated",
                               "ninfer:prefix_cache_blocks"}) {
        std::optional<double> v = gauge(r->body, name);
        g[name] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
      }
      const bool settled = g["ninfer:http_requests_in_flight"] == 0.0 && g["vllm:num_requests_running"] == 0.0 &&
                           g["vllm:num_requests_waiting"] == 0.0 && g["ninfer:kv_blocks_used"] == 0.0 &&
                           g["ninfer:kv_blocks_allocated"] == g["ninfer:prefix_cache_blocks"];
      g["settled"] = settled;
      if (settled) return g;
    } else {
      g["settled"] = false;
      g["error"] = "no /metrics answer";
    }
    if (std::chrono::steady_clock::now() >= deadline) return g;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

JsonlSummary check_jsonl(const std::string& path, const std::set<std::string>& seen_ids) {
  JsonlSummary s;
  std::map<std::string, uint64_t> per_id;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    ++s.lines;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    per_id[j.value("request_id", "")]++;
    s.stop_reasons[j.value("stop_reason", "?")]++;
  }
  for (const std::string& id : seen_ids)
    if (!per_id.count(id)) s.missing++;
  for (const auto& [id, n] : per_id) {
    if (n > 1) s.duplicates += n - 1;
    if (!seen_ids.count(id)) s.unseen += n;
  }
  return s;
}

}  // namespace ninfer::soak
