#include "bench/serving/run_file.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace ninfer::bench {

namespace {

using json = nlohmann::json;

// Reads `j[key]` as T, or `fallback` when absent; a wrong type names the field.
template <typename T>
T get_or(const json& j, const std::string& key, T fallback, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const json::exception& e) {
    fail(ErrorKind::kInvalidArgument, "{}: field '{}' has the wrong type ({})", where, key, e.what());
  }
}

std::filesystem::path resolve(const std::filesystem::path& base, const std::string& p) {
  if (p.empty()) return {};
  std::filesystem::path path(p);
  return path.is_absolute() ? path : (base / path).lexically_normal();
}

void refuse_owned_flags(const std::vector<std::string>& flags, const std::string& where) {
  // ninfer-bench sets these itself for every server it starts.
  static const std::set<std::string> kOwned = {"--port", "--host", "--log-jsonl", "--model"};
  for (const std::string& f : flags)
    if (kOwned.count(f))
      fail(ErrorKind::kInvalidArgument, "{}: flag {} is set by ninfer-bench (use the configuration's \"model\" for "
           "the artifact); remove it", where, f);
}

// A flag and its value ("--max-context 196608"), or a flag alone ("--greedy"): a token that does not start with
// "--" after a flag is its value.
std::vector<std::vector<std::string>> flag_groups(const std::vector<std::string>& flags) {
  std::vector<std::vector<std::string>> groups;
  for (const std::string& f : flags) {
    if (f.rfind("--", 0) == 0 || groups.empty()) groups.push_back({f});
    else groups.back().push_back(f);
  }
  return groups;
}

SweepSpec read_sweep(const json& j, const std::string& where) {
  SweepSpec s;
  s.start = get_or<int64_t>(j, "start", 0, where);
  s.step = get_or<int64_t>(j, "step", 8192, where);
  s.min = get_or<int64_t>(j, "min", s.step, where);
  s.flags = get_or<std::vector<std::string>>(j, "flags", {}, where);
  if (s.start <= 0 || s.step <= 0 || s.min <= 0 || s.min > s.start)
    fail(ErrorKind::kInvalidArgument, "{}: needs 0 < min <= start and step > 0 (start {}, step {}, min {})", where,
         s.start, s.step, s.min);
  return s;
}

ServerConfig read_config(const json& j, const std::vector<std::string>& common, const std::filesystem::path& base,
                         const std::string& where) {
  ServerConfig c;
  c.name = get_or<std::string>(j, "name", "", where);
  if (c.name.empty()) fail(ErrorKind::kInvalidArgument, "{}: 'name' is required", where);
  for (char ch : c.name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.')
      fail(ErrorKind::kInvalidArgument, "{}: name '{}' may hold only letters, digits, '-', '_' and '.' (it names "
           "files of the report)", where, c.name);
  c.description = get_or<std::string>(j, "description", "", where);
  c.url = get_or<std::string>(j, "url", "", where);
  c.jsonl = resolve(base, get_or<std::string>(j, "jsonl", "", where)).string();
  const std::string model = get_or<std::string>(j, "model", "", where);
  c.model = resolve(base, model).string();
  std::vector<std::string> own = get_or<std::vector<std::string>>(j, "flags", {}, where);
  refuse_owned_flags(own, where);
  c.flags = merge_flags(common, own);
  if (!c.url.empty() && c.jsonl.empty())
    fail(ErrorKind::kInvalidArgument, "{}: a configuration with 'url' needs 'jsonl', the server's --log-jsonl file",
         where);
  if (j.contains("sweep") && !j["sweep"].is_null()) {
    if (!c.url.empty()) fail(ErrorKind::kInvalidArgument, "{}: 'sweep' starts servers; it cannot go with 'url'", where);
    c.sweep = read_sweep(j["sweep"], where + ".sweep");
  }
  return c;
}

Scenario read_scenario(const json& j, int default_repeats, const std::filesystem::path& base,
                       const std::string& where) {
  Scenario s;
  s.id = get_or<std::string>(j, "id", "", where);
  if (s.id.empty()) fail(ErrorKind::kInvalidArgument, "{}: 'id' is required", where);
  s.title = get_or<std::string>(j, "title", s.id, where);
  s.prompt_file = resolve(base, get_or<std::string>(j, "prompt_file", "", where));
  s.max_tokens = get_or<int64_t>(j, "max_tokens", 0, where);
  s.reasoning_effort = get_or<std::string>(j, "reasoning_effort", "", where);
  s.repeats = get_or<int>(j, "repeats", default_repeats, where);
  if (j.contains("corpus") && !j["corpus"].is_null()) {
    const json& cj = j["corpus"];
    const std::string cw = where + ".corpus";
    SourceCorpus c;
    c.root = resolve(base, get_or<std::string>(cj, "root", ".", cw));
    c.dirs = get_or<std::vector<std::string>>(cj, "dirs", {"."}, cw);
    c.extensions = get_or<std::vector<std::string>>(cj, "extensions", {".h", ".cpp"}, cw);
    c.chars = get_or<int64_t>(cj, "chars", 0, cw);
    c.question = get_or<std::string>(cj, "question", "", cw);
    if (c.chars <= 0 || c.question.empty())
      fail(ErrorKind::kInvalidArgument, "{}: needs 'chars' > 0 and a 'question'", cw);
    s.corpus = std::move(c);
  }
  if (s.prompt_file.empty() == !s.corpus)
    fail(ErrorKind::kInvalidArgument, "{}: give exactly one of 'prompt_file' and 'corpus'", where);
  if (s.max_tokens < 1) fail(ErrorKind::kInvalidArgument, "{}: 'max_tokens' must be at least 1", where);
  if (s.repeats < 1) fail(ErrorKind::kInvalidArgument, "{}: 'repeats' must be at least 1", where);
  return s;
}

}  // namespace

std::vector<std::string> merge_flags(const std::vector<std::string>& common, const std::vector<std::string>& own) {
  std::vector<std::vector<std::string>> groups = flag_groups(common);
  for (std::vector<std::string>& g : flag_groups(own)) {
    auto same = std::find_if(groups.begin(), groups.end(), [&](const auto& c) { return c[0] == g[0]; });
    if (same != groups.end()) *same = std::move(g);
    else groups.push_back(std::move(g));
  }
  std::vector<std::string> out;
  for (const auto& g : groups) out.insert(out.end(), g.begin(), g.end());
  return out;
}

RunFile load_run_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) fail(ErrorKind::kNotFound, "run file {}: cannot be opened", path.string());
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    fail(ErrorKind::kCorrupt, "run file {}: not valid JSON ({})", path.string(), e.what());
  }
  const std::string where = "run file " + path.string();
  if (!j.is_object()) fail(ErrorKind::kCorrupt, "{}: the top level must be an object", where);
  // Kept relative when the run file was named relatively, so the report shows short paths.
  const std::filesystem::path base = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  RunFile r;
  r.path = path;
  r.name = get_or<std::string>(j, "name", path.stem().string(), where);
  r.description = get_or<std::string>(j, "description", "", where);
  const auto common = get_or<std::vector<std::string>>(j, "common_flags", {}, where);
  refuse_owned_flags(common, where + ": common_flags");
  const int repeats = get_or<int>(j, "repeats", 1, where);
  if (!j.contains("configurations") || !j["configurations"].is_array() || j["configurations"].empty())
    fail(ErrorKind::kInvalidArgument, "{}: 'configurations' must be a non-empty array", where);
  if (!j.contains("scenarios") || !j["scenarios"].is_array() || j["scenarios"].empty())
    fail(ErrorKind::kInvalidArgument, "{}: 'scenarios' must be a non-empty array", where);
  std::set<std::string> names;
  for (size_t i = 0; i < j["configurations"].size(); ++i) {
    r.configs.push_back(read_config(j["configurations"][i], common, base, fmt::format("{}: configurations[{}]", where, i)));
    if (!names.insert(r.configs.back().name).second)
      fail(ErrorKind::kInvalidArgument, "{}: configuration name '{}' appears twice", where, r.configs.back().name);
  }
  std::set<std::string> ids;
  for (size_t i = 0; i < j["scenarios"].size(); ++i) {
    r.scenarios.push_back(read_scenario(j["scenarios"][i], repeats, base, fmt::format("{}: scenarios[{}]", where, i)));
    if (!ids.insert(r.scenarios.back().id).second)
      fail(ErrorKind::kInvalidArgument, "{}: scenario id '{}' appears twice", where, r.scenarios.back().id);
  }
  return r;
}

}  // namespace ninfer::bench
