#include "bench/serving/bench_runner.h"

#include <fstream>
#include <future>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "bench/serving/chat_client.h"

namespace ninfer::bench {

using json = nlohmann::json;

namespace {

// Sends one request, logging a line every 30 s while it runs.
ChatAnswer send_with_heartbeat(const std::string& host, int port, const ChatRequest& req, const RunnerOptions& o,
                               const std::string& label) {
  auto fut = std::async(std::launch::async, [&] { return send_chat(host, port, req, o.request_timeout); });
  const auto t0 = std::chrono::steady_clock::now();
  while (fut.wait_for(std::chrono::seconds(30)) != std::future_status::ready)
    spdlog::info("  {}: still running, {:.0f} s", label,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return fut.get();
}

int64_t line_int(const json& line, const char* key) {
  return line.is_object() && line.contains(key) && line[key].is_number() ? line[key].get<int64_t>() : 0;
}

// Copies the lines of these requests from a shared JSONL file into the report's own file.
void write_lines(const std::filesystem::path& path, const std::vector<RequestRun>& requests) {
  std::ofstream out(path);
  for (const RequestRun& r : requests)
    if (!r.line.is_null()) out << r.line.dump() << "\n";
}

}  // namespace

ConfigRun run_configuration(const RunFile& run, const ServerConfig& config, const std::vector<std::string>& prompts,
                            const RunnerOptions& o, int index, int count) {
  ConfigRun result;
  result.name = config.name;
  result.description = config.description;
  result.url = config.url;
  const std::filesystem::path raw = o.out_dir / "raw";
  std::filesystem::create_directories(raw);
  const std::string own_jsonl = (raw / (config.name + ".jsonl")).string();
  std::string jsonl = own_jsonl;
  std::string host = "127.0.0.1";
  int port = 0;
  std::unique_ptr<ServeProcess> server;
  const std::string tag = fmt::format("[{}/{}] {}", index, count, config.name);

  if (config.url.empty()) {
    std::filesystem::remove(own_jsonl);
    std::error_code ec;
    if (!config.model.empty() && !std::filesystem::is_regular_file(config.model, ec)) {
      result.start_error = fmt::format("model {} does not exist (edit the configuration's \"model\")", config.model);
      spdlog::error("{}: {}", tag, result.start_error);
      return result;
    }
    std::vector<std::string> args;
    if (!config.model.empty()) args = {"--model", config.model};
    args.insert(args.end(), config.flags.begin(), config.flags.end());
    try {
      server = std::make_unique<ServeProcess>(o.serve_binary, args, own_jsonl,
                                              (raw / (config.name + ".serve.log")).string());
    } catch (const std::exception& e) {
      result.start_error = e.what();
      spdlog::error("{}: {}", tag, result.start_error);
      return result;
    }
    result.command = server->command();
    spdlog::info("{}: starting {}", tag, fmt::join(result.command, " "));
    if (!server->wait_ready(o.ready_timeout)) {
      const std::string log = server->log_text();
      const auto shortfall = parse_plan_shortfall(log);
      result.start_error = shortfall ? shortfall->message
                                     : fmt::format("ninfer-serve did not answer /health with 200 (log: {})",
                                                   (raw / (config.name + ".serve.log")).string());
      result.process_s = server->process_s();
      spdlog::error("{}: {}", tag, result.start_error);
      return result;
    }
    result.load_s = server->load_s();
    result.memory = parse_memory_reading(server->log_text());
    port = server->port();
    spdlog::info("{}: ready in {:.1f} s (free after load {}, planned slack {})", tag, result.load_s,
                 result.memory.free_after_load_mib ? fmt::format("{:.1f} MiB", *result.memory.free_after_load_mib) : "?",
                 result.memory.planned_slack_mib ? fmt::format("{:.1f} MiB", *result.memory.planned_slack_mib) : "?");
  } else {
    std::tie(host, port) = parse_url(config.url);
    jsonl = config.jsonl;
    spdlog::info("{}: using the running server at {} (JSONL {})", tag, config.url, jsonl);
  }

  int64_t prompt_total = 0, completion_total = 0;
  int total_requests = 0, done = 0;
  for (const Scenario& s : run.scenarios) total_requests += s.repeats;
  for (size_t si = 0; si < run.scenarios.size(); ++si) {
    const Scenario& s = run.scenarios[si];
    for (int rep = 1; rep <= s.repeats; ++rep) {
      ++done;
      const std::string label = fmt::format("{} request {}/{} {} (repeat {}/{})", tag, done, total_requests, s.id,
                                            rep, s.repeats);
      spdlog::info("{}: max_tokens {}{}", label, s.max_tokens,
                   s.reasoning_effort.empty() ? "" : ", reasoning_effort " + s.reasoning_effort);
      RequestRun rr;
      rr.scenario = s.id;
      rr.repeat = rep;
      const ChatAnswer a = send_with_heartbeat(host, port, {prompts[si], s.max_tokens, s.reasoning_effort}, o, label);
      rr.http_status = a.http_status;
      rr.client_s = a.client_s;
      rr.error = a.error;
      if (!a.request_id.empty()) {
        if (auto line = wait_jsonl_line(jsonl, a.request_id, std::chrono::seconds(10))) rr.line = std::move(*line);
        else rr.error += (rr.error.empty() ? "" : "; ") + fmt::format("no JSONL line for {} in {}", a.request_id, jsonl);
      }
      if (rr.http_status != 200)
        spdlog::warn("{}: HTTP {} {}", label, rr.http_status, rr.error);
      prompt_total += line_int(rr.line, "prompt_tokens");
      completion_total += line_int(rr.line, "completion_tokens");
      const json& l = rr.line;
      if (l.is_object())
        spdlog::info("{}: {} prompt + {} completion tokens, {}, decode {} tok/s, {:.2f} s{}; so far {} prompt + {} "
                     "completion tokens",
                     label, line_int(l, "prompt_tokens"), line_int(l, "completion_tokens"),
                     l.value("stop_reason", "?"),
                     l.contains("decode_tok_s") && l["decode_tok_s"].is_number()
                         ? fmt::format("{:.2f}", l["decode_tok_s"].get<double>()) : "n/a",
                     l.contains("timings") ? l["timings"].value("total_s", 0.0) : 0.0,
                     l.value("empty_content", false) ? ", empty content" : "", prompt_total, completion_total);
      result.requests.push_back(std::move(rr));
    }
  }

  if (server) {
    result.exit_status = server->stop(o.stop_timeout);
    result.process_s = server->process_s();
    spdlog::info("{}: stopped (exit status {}), process {:.1f} s", tag, result.exit_status, result.process_s);
  } else {
    write_lines(own_jsonl, result.requests);
  }
  return result;
}

}  // namespace ninfer::bench
