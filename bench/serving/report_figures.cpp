#include "bench/serving/report_figures.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace ninfer::bench {

using json = nlohmann::json;

namespace {

double num(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}
double timing(const json& line, const char* key) { return line.contains("timings") ? num(line["timings"], key) : 0.0; }

// A request whose line says it was served (200): only those count in the speed figures.
bool served(const RequestRun& r) { return r.http_status == 200 && r.line.is_object() && r.line.value("http_status", 0) == 200; }

json opt_num(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json overview_row(const ConfigRun& c) {
  int64_t prompt = 0, completion = 0, truncated = 0, empty = 0, failed = 0, n = 0;
  double request_s = 0, decode_s = 0, decode_tokens = 0;
  for (const RequestRun& r : c.requests) {
    ++n;
    if (!served(r)) {
      ++failed;
      continue;
    }
    const json& l = r.line;
    const int64_t ct = static_cast<int64_t>(num(l, "completion_tokens"));
    prompt += static_cast<int64_t>(num(l, "prompt_tokens"));
    completion += ct;
    request_s += timing(l, "total_s");
    if (ct >= 2 && timing(l, "decode_s") > 0) {
      decode_tokens += static_cast<double>(ct - 1);
      decode_s += timing(l, "decode_s");
    }
    if (l.value("stop_reason", "") == "output_limit") ++truncated;
    if (l.value("empty_content", false)) ++empty;
  }
  return {{"config", c.name},
          {"requests", n},
          {"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"load_s", c.url.empty() ? json(c.load_s) : json(nullptr)},  // not measured for a running server
          {"request_s", request_s},
          {"process_s", c.url.empty() ? json(c.process_s) : json(nullptr)},
          {"decode_s", decode_s},
          {"decode_tokens", decode_tokens},
          {"decode_tok_s", decode_s > 0 ? json(decode_tokens / decode_s) : json(nullptr)},
          {"e2e_tok_s", request_s > 0 ? json(static_cast<double>(completion) / request_s) : json(nullptr)},
          {"truncated", truncated},
          {"empty_content", empty},
          {"failed", failed},
          {"start_error", c.start_error}};
}

json overview_total(const json& rows) {
  int64_t n = 0, prompt = 0, completion = 0, truncated = 0, empty = 0, failed = 0;
  double load = 0, request = 0, process = 0, decode_s = 0, decode_tokens = 0;
  for (const json& r : rows) {
    n += r["requests"].get<int64_t>(), prompt += r["prompt_tokens"].get<int64_t>();
    completion += r["completion_tokens"].get<int64_t>(), truncated += r["truncated"].get<int64_t>();
    empty += r["empty_content"].get<int64_t>(), failed += r["failed"].get<int64_t>();
    load += r["load_s"].is_number() ? r["load_s"].get<double>() : 0.0, request += r["request_s"].get<double>();
    process += r["process_s"].is_number() ? r["process_s"].get<double>() : 0.0;
    decode_s += r["decode_s"].get<double>(), decode_tokens += r["decode_tokens"].get<double>();
  }
  return {{"config", "total"}, {"requests", n}, {"prompt_tokens", prompt}, {"completion_tokens", completion},
          {"total_tokens", prompt + completion}, {"load_s", load}, {"request_s", request}, {"process_s", process},
          {"decode_s", decode_s}, {"decode_tokens", decode_tokens},
          {"decode_tok_s", decode_s > 0 ? json(decode_tokens / decode_s) : json(nullptr)},
          {"e2e_tok_s", request > 0 ? json(static_cast<double>(completion) / request) : json(nullptr)},
          {"truncated", truncated}, {"empty_content", empty}, {"failed", failed}};
}

// Values of one figure for (config, scenario) over the repeats that were served.
std::vector<double> values_of(const ConfigRun& c, const std::string& scenario, const char* key) {
  std::vector<double> v;
  for (const RequestRun& r : c.requests) {
    if (r.scenario != scenario || !served(r)) continue;
    const json& l = r.line;
    if (std::string(key) == "prefill_s" || std::string(key) == "ttft_s") v.push_back(timing(l, key));
    else if (l.contains(key) && l[key].is_number()) v.push_back(l[key].get<double>());
  }
  return v;
}

json per_scenario(const ReportInput& in, int& min_repeats) {
  json rows = json::array();
  for (const Scenario& s : in.run->scenarios) {
    json by = json::object();
    std::vector<std::pair<double, std::string>> medians;
    double noise = 0;
    for (const ConfigRun& c : in.configs) {
      const std::vector<double> v = values_of(c, s.id, "decode_tok_s");
      if (v.empty()) {
        by[c.name] = nullptr;
        continue;
      }
      min_repeats = std::min(min_repeats, static_cast<int>(v.size()));
      json m = min_median_max(v);
      const double spread = m["median"].get<double>() > 0
                                ? (m["max"].get<double>() - m["min"].get<double>()) / m["median"].get<double>() : 0;
      m["n"] = v.size();
      m["spread"] = spread;
      noise = std::max(noise, spread);
      medians.emplace_back(m["median"].get<double>(), c.name);
      by[c.name] = m;
    }
    std::sort(medians.begin(), medians.end(), std::greater<>());
    json row = {{"scenario", s.id}, {"title", s.title}, {"by_config", by}, {"measured_noise", noise}};
    if (medians.size() >= 2) {
      const double margin = (medians[0].first - medians[1].first) / medians[1].first;
      row["fastest"] = medians[0].second;
      row["runner_up"] = medians[1].second;
      row["margin"] = margin;
    } else if (medians.size() == 1) {
      row["fastest"] = medians[0].second;
    }
    rows.push_back(row);
  }
  return rows;
}

// The verdict on each scenario's fastest: a margin within the noise (the measured spread when there are repeats,
// else the seed's 3% rule) is not a stable advantage.
void add_verdicts(json& rows, bool measured) {
  for (json& row : rows) {
    if (!row.contains("margin")) continue;
    const double threshold = measured ? std::max(row["measured_noise"].get<double>(), 0.0) : kSeedNoiseRule;
    row["noise_threshold"] = threshold;
    row["noise_source"] = measured ? "measured" : "seed rule";
    row["stable"] = row["margin"].get<double>() > threshold;
  }
}

json prefill_table(const ReportInput& in, std::string& long_id) {
  // The long-context scenario: the largest median prompt.
  double longest = -1;
  for (const Scenario& s : in.run->scenarios)
    for (const ConfigRun& c : in.configs) {
      const std::vector<double> v = values_of(c, s.id, "prompt_tokens");
      if (!v.empty() && min_median_max(v)["median"].get<double>() > longest)
        longest = min_median_max(v)["median"].get<double>(), long_id = s.id;
    }
  json rows = json::array();
  for (const ConfigRun& c : in.configs) {
    json row = {{"config", c.name}, {"scenario", long_id}};
    for (const char* key : {"prompt_tokens", "prefill_s", "prefill_tok_s", "ttft_s"}) {
      const std::vector<double> v = long_id.empty() ? std::vector<double>{} : values_of(c, long_id, key);
      row[key] = v.empty() ? json(nullptr) : min_median_max(v);
    }
    rows.push_back(row);
  }
  return rows;
}

json points(const ReportInput& in) {
  json out = json::array();
  for (const ConfigRun& c : in.configs)
    for (const RequestRun& r : c.requests) {
      if (!served(r)) continue;
      const json& l = r.line;
      out.push_back({{"config", c.name}, {"scenario", r.scenario}, {"repeat", r.repeat},
                     {"prompt_tokens", num(l, "prompt_tokens")}, {"prefill_tok_s", l.value("prefill_tok_s", json())},
                     {"ttft_s", timing(l, "ttft_s")}, {"decode_tok_s", l.value("decode_tok_s", json())}});
    }
  return out;
}

json memory_table(const ReportInput& in) {
  json rows = json::array();
  for (const ConfigRun& c : in.configs) {
    int64_t truncated = 0, empty = 0, n = 0;
    json empty_in = json::array(), natural = json::array();
    for (const RequestRun& r : c.requests) {
      if (!served(r)) continue;
      ++n;
      const std::string where = fmt::format("{}#{}", r.scenario, r.repeat);
      if (r.line.value("stop_reason", "") == "output_limit") ++truncated;
      else natural.push_back({{"request", where}, {"stop_reason", r.line.value("stop_reason", "")},
                              {"completion_tokens", num(r.line, "completion_tokens")}});
      if (r.line.value("empty_content", false)) ++empty, empty_in.push_back(where);
    }
    rows.push_back({{"config", c.name}, {"free_after_load_mib", opt_num(c.memory.free_after_load_mib)},
                    {"planned_slack_mib", opt_num(c.memory.planned_slack_mib)}, {"served", n},
                    {"truncated", truncated}, {"empty_content", empty}, {"empty_in", empty_in},
                    {"not_truncated", natural}});
  }
  return rows;
}

json spec_table(const ReportInput& in, const json& overview) {
  json rows = json::array();
  double baseline = 0;
  std::string baseline_name;
  for (size_t i = 0; i < in.configs.size(); ++i) {
    const ConfigRun& c = in.configs[i];
    int64_t steps = 0, drafted = 0, accepted = 0, k = 0;
    std::vector<double> per_pos;
    std::string method, head;
    for (const RequestRun& r : c.requests) {
      if (!served(r) || !r.line.contains("spec")) continue;
      const json& s = r.line["spec"];
      method = s.value("method", ""), head = s.value("head", "");
      k = std::max<int64_t>(k, s.value("draft_tokens", 0));
      steps += s.value("steps", 0), drafted += s.value("drafted", 0), accepted += s.value("accepted", 0);
      const std::vector<double> pos = s.value("accepted_per_pos", std::vector<double>{});
      if (per_pos.size() < pos.size()) per_pos.resize(pos.size(), 0);
      for (size_t p = 0; p < pos.size(); ++p) per_pos[p] += pos[p];
    }
    const json& ov = overview[i];
    if (method.empty()) {
      if (baseline_name.empty() && ov["decode_tok_s"].is_number())
        baseline = ov["decode_tok_s"].get<double>(), baseline_name = c.name;
      rows.push_back({{"config", c.name}, {"method", "none"}, {"decode_tok_s", ov["decode_tok_s"]}});
      continue;
    }
    json pos_rate = json::array();
    for (double a : per_pos) pos_rate.push_back(steps > 0 ? json(a / static_cast<double>(steps)) : json(nullptr));
    rows.push_back({{"config", c.name}, {"method", method}, {"draft_tokens", k}, {"head", head}, {"steps", steps},
                    {"drafted", drafted}, {"accepted", accepted},
                    {"acceptance_rate", drafted > 0 ? json(static_cast<double>(accepted) / drafted) : json(nullptr)},
                    {"tokens_per_step", steps > 0 ? json(1.0 + static_cast<double>(accepted) / steps) : json(nullptr)},
                    {"accepted_per_pos", per_pos}, {"acceptance_per_pos", pos_rate},
                    {"decode_tok_s", ov["decode_tok_s"]}});
  }
  for (json& r : rows)
    if (baseline > 0 && r["decode_tok_s"].is_number() && r["config"] != baseline_name) {
      r["baseline"] = baseline_name;
      r["vs_baseline"] = r["decode_tok_s"].get<double>() / baseline - 1;
    }
  return rows;
}

json sweep_json(const std::vector<SweepResult>& sweeps) {
  json out = json::array();
  for (const SweepResult& s : sweeps) {
    json steps = json::array();
    for (const SweepStep& st : s.steps)
      steps.push_back({{"max_context", st.max_context}, {"started", st.started},
                       {"missing_mib", opt_num(st.missing_mib)}, {"slack_mib", opt_num(st.slack_mib)},
                       {"free_mib", opt_num(st.free_mib)}, {"message", st.message}});
    out.push_back({{"config", s.config}, {"probe_flags", s.probe_flags}, {"largest_started", s.largest_started},
                   {"steps", steps}});
  }
  return out;
}

}  // namespace

json min_median_max(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {{"min", v.front()}, {"median", median}, {"max", v.back()}};
}

json build_report(const ReportInput& in) {
  json report;
  report["run"] = {{"name", in.run->name}, {"description", in.run->description},
                   {"run_file", in.run->path.string()}, {"serve_binary", in.serve_binary},
                   {"started_at", in.started_at}, {"finished_at", in.finished_at}, {"wall_s", in.wall_s}};
  json scenarios = json::array();
  for (size_t i = 0; i < in.run->scenarios.size(); ++i) {
    const Scenario& s = in.run->scenarios[i];
    scenarios.push_back({{"id", s.id}, {"title", s.title}, {"max_tokens", s.max_tokens},
                         {"reasoning_effort", s.reasoning_effort}, {"repeats", s.repeats},
                         {"prompt_chars", i < in.prompt_chars.size() ? in.prompt_chars[i] : 0}});
  }
  report["scenarios"] = scenarios;
  json configs = json::array(), requests = json::array(), overview = json::array();
  for (const ConfigRun& c : in.configs) {
    configs.push_back({{"name", c.name}, {"description", c.description}, {"command", c.command}, {"url", c.url},
                       {"start_error", c.start_error}, {"load_s", c.load_s}, {"process_s", c.process_s},
                       {"exit_status", c.exit_status},
                       {"memory", {{"free_after_load_mib", opt_num(c.memory.free_after_load_mib)},
                                   {"planned_slack_mib", opt_num(c.memory.planned_slack_mib)}}}});
    for (const RequestRun& r : c.requests)
      requests.push_back({{"config", c.name}, {"scenario", r.scenario}, {"repeat", r.repeat},
                          {"http_status", r.http_status}, {"client_s", r.client_s}, {"error", r.error},
                          {"line", r.line}});
    overview.push_back(overview_row(c));
  }
  report["configurations"] = configs;
  report["requests"] = requests;
  report["overview"] = overview;
  report["overview_total"] = overview_total(overview);
  int min_repeats = 1 << 30;
  json scen = per_scenario(in, min_repeats);
  const bool measured = min_repeats != (1 << 30) && min_repeats >= 2;
  add_verdicts(scen, measured);
  report["per_scenario"] = scen;
  report["noise"] = {{"measured", measured}, {"min_repeats", min_repeats == (1 << 30) ? 0 : min_repeats},
                     {"seed_rule", kSeedNoiseRule}};
  std::string long_id;
  report["prefill"] = prefill_table(in, long_id);
  report["long_context_scenario"] = long_id;
  report["points"] = points(in);
  report["memory"] = memory_table(in);
  report["speculative"] = spec_table(in, overview);
  report["sweeps"] = sweep_json(in.sweeps);
  return report;
}

}  // namespace ninfer::bench
