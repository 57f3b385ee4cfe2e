// Owns the ninfer-bench run file: the server configurations and scenarios it names, read from JSON (docs/bench.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ninfer::bench {

// The largest-context probe of one configuration: --max-context from `start` down by `step` until a start succeeds
// (or `min` is passed). `flags` are added to the configuration's flags for the probes only (e.g. --device-memory).
struct SweepSpec {
  int64_t start = 0;
  int64_t step = 8192;
  int64_t min = 8192;
  std::vector<std::string> flags;
};

// One server configuration: a ninfer-serve started with `model` and `flags` (after the run's common flags), or a
// running server at `url` whose --log-jsonl file is `jsonl`.
struct ServerConfig {
  std::string name;
  std::string description;
  std::string model;               // empty: the server's embedded default model
  std::vector<std::string> flags;  // the run's common flags merged with its own (merge_flags)
  std::string url;                 // http://host:port of a running server (then nothing is started)
  std::string jsonl;               // with url: that server's --log-jsonl file
  std::optional<SweepSpec> sweep;
};

// Where a long prompt comes from: files of a source tree, chosen deterministically (the dirs in order, sorted
// paths within each, names ending with one of `extensions`), concatenated with a header line per file up to
// `chars` characters, then `question`.
struct SourceCorpus {
  std::filesystem::path root;
  std::vector<std::string> dirs;
  std::vector<std::string> extensions;
  int64_t chars = 0;
  std::string question;
};

struct Scenario {
  std::string id;
  std::string title;
  std::filesystem::path prompt_file;   // the prompt as a text file, or
  std::optional<SourceCorpus> corpus;  // a prompt generated from source files
  int64_t max_tokens = 0;
  std::string reasoning_effort;        // empty: not sent
  int repeats = 1;
};

struct RunFile {
  std::string name;
  std::string description;
  std::filesystem::path path;
  std::vector<ServerConfig> configs;
  std::vector<Scenario> scenarios;
};

// The common flags with a configuration's own: a flag the configuration repeats replaces the common one (with its
// value) in place; the others follow.
std::vector<std::string> merge_flags(const std::vector<std::string>& common, const std::vector<std::string>& own);

// Reads and checks a run file. Relative paths in it (prompt files, models, corpus roots) are relative to the run
// file's folder. Throws ninfer::Error naming the file and the field on any problem.
RunFile load_run_file(const std::filesystem::path& path);

}  // namespace ninfer::bench
