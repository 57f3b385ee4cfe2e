#include "server/serve_options.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

namespace ninfer::server {

std::string_view kv_dtype_name(KvDtype dtype) {
  switch (dtype) {
  case KvDtype::kInt8:
    return "int8";
  case KvDtype::kBf16:
    return "bf16";
  case KvDtype::kF16:
    return "f16";
  case KvDtype::kF32:
    return "f32";
  }
  return "?";
}

std::string_view spec_method_name(SpecMethod m) {
  switch (m) {
  case SpecMethod::kNone:
    return "none";
  case SpecMethod::kMtp:
    return "mtp";
  case SpecMethod::kDflash2:
    return "dflash2";
  }
  return "?";
}

namespace {

// The gates of this build. A change that implements a feature flips its `built`
// to true.
constexpr FeatureGate kGates[] = {
    {"--spec mtp", "MTP speculative decoding",
     [](const ServeOptions &o) { return o.spec == SpecMethod::kMtp; }, true},
    {"--spec dflash2", "DFlash2 speculative decoding",
     [](const ServeOptions &o) { return o.spec == SpecMethod::kDflash2; },
     true},
    {"--lm-head-draft", "the reduced-vocabulary draft lm_head",
     [](const ServeOptions &o) { return o.lm_head_draft; }, true},
    {"--nnodes with --backend cuda",
     "multi-process tensor parallelism on the CUDA backend",
     [](const ServeOptions &o) { return o.nnodes > 1 && o.backend == "cuda"; },
     true},
    {"--kv-dtype int8", "the int8 KV cache",
     [](const ServeOptions &o) { return o.kv_dtype == KvDtype::kInt8; }, true},
    {"--reasoning-budget", "the reasoning budget",
     [](const ServeOptions &o) { return o.reasoning_budget.has_value(); },
     true},
};

bool parse_int64(std::string_view s, int64_t &out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
}

// CLI11 messages start with the option name or "Could not convert: --flag =
// value"; both name it.
ParsedServeOptions usage_error(std::string message) {
  ParsedServeOptions r;
  r.exit_code = 2;
  r.message = std::move(message);
  return r;
}

std::vector<std::string> split_commas(const std::string &s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos)
      end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

} // namespace

std::span<const FeatureGate> default_feature_gates() { return kGates; }

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  size_t i = 0;
  while (i < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  const std::string number(text.substr(0, i));
  std::string unit;
  for (char ch : text.substr(i))
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (number.empty() || number.front() == '.' ||
      std::count(number.begin(), number.end(), '.') > 1)
    return std::nullopt;
  static const std::pair<std::string_view, double> kUnits[] = {
      {"", 1.0},       {"b", 1.0},      {"k", 0x1p10},   {"kib", 0x1p10},
      {"kb", 1e3},     {"m", 0x1p20},   {"mib", 0x1p20}, {"mb", 1e6},
      {"g", 0x1p30},   {"gib", 0x1p30}, {"gb", 1e9},     {"t", 0x1p40},
      {"tib", 0x1p40}, {"tb", 1e12}};
  for (const auto &[name, scale] : kUnits) {
    if (unit != name)
      continue;
    const double v = std::stod(number) * scale;
    if (!(v >= 1.0) || v > 0x1p62)
      return std::nullopt;
    return static_cast<uint64_t>(v + 0.5);
  }
  return std::nullopt;
}

std::optional<std::string>
check_feature_gates(const ServeOptions &options,
                    std::span<const FeatureGate> gates) {
  std::string message;
  for (const FeatureGate &g : gates) {
    if (g.built || !g.in_use(options))
      continue;
    if (!message.empty())
      message += "\n";
    message += fmt::format("{}: {} is not built yet in this version of "
                           "ninfer-serve; remove the flag",
                           g.flag, g.feature);
  }
  if (message.empty())
    return std::nullopt;
  return message;
}

ParsedServeOptions parse_serve_options(int argc, const char *const *argv,
                                       const std::string &default_model,
                                       std::span<const FeatureGate> gates) {
  ServeOptions o;
  o.model = default_model;
  std::string kv_capacity = "auto";
  std::string kv_dtype = "bf16";
  std::string spec = "none";
  std::string nvfp4_activations = "w4a4";
  std::string dense_activations = "f32";
  std::string cuda_graphs = "off";
  std::string devices;
  std::string api_keys;
  std::string cors_origins;
  int64_t max_context = 0;
  int64_t reasoning_budget = -1;
  int draft_tokens = 0;
  bool no_prefix_reuse = false;
  bool verify = false;

  CLI::App app{"ninfer-serve: OpenAI-compatible LLM inference server "
               "(docs/cli.md, docs/api.md)",
               "ninfer-serve"};
  app.set_version_flag("--version",
                       std::string("ninfer-serve ") + NINFER_VERSION);
  app.add_option("--model", o.model, "Path of the .ninfer artifact")
      ->capture_default_str();
  app.add_option("--host", o.host, "Address to listen on")
      ->capture_default_str();
  app.add_option("--port", o.port, "TCP port to listen on (0: any free port)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--prefill-chunk", o.prefill_chunk,
                 "Prompt tokens processed per engine step")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  auto *max_context_opt =
      app.add_option("--max-context", max_context,
                     "Longest sequence (prompt + output) in tokens [default: "
                     "the model's maximum]")
          ->check(CLI::Range(int64_t{1}, int64_t{1} << 32));
  app.add_option(
         "--kv-capacity", kv_capacity,
         "KV cache size in tokens, or auto (as much as free memory allows)")
      ->capture_default_str();
  app.add_option("--kv-dtype", kv_dtype, "KV cache element type")
      ->capture_default_str()
      ->check(CLI::IsMember({"int8", "bf16", "f16", "f32"}));
  app.add_option("--nvfp4-activations", nvfp4_activations,
                 "Activations of NVFP4 layers: w4a4 (quantized to NVFP4 per 16 "
                 "elements) or w4a16 (kept in f32)")
      ->capture_default_str()
      ->check(CLI::IsMember({"w4a4", "w4a16"}));
  app.add_option("--dense-activations", dense_activations,
                 "Activations of bf16-weight layers on the CPU backend: f32 "
                 "(exact products) or bf16 (rounded to bf16 and multiplied "
                 "with AVX512-BF16 where the CPU has it, as llama.cpp does)")
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "bf16"}));
  app.add_option("--cuda-graphs", cuda_graphs,
                 "Replay decode and verification steps as recorded CUDA graphs "
                 "(docs/cuda-graphs.md); off until "
                 "verified on a GPU")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--max-concurrency", o.max_concurrency,
                 "Sequences decoded together")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--max-n", o.max_n,
                 "Most choices one request may ask for (`n`); each is a "
                 "sequence, queued like a request of its own")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  auto *tp_opt = app.add_option("--tp", o.tp, "Tensor-parallel ranks")
                     ->capture_default_str()
                     ->check(CLI::Range(1, 64));
  auto *devices_opt = app.add_option(
      "--devices", devices,
      "Comma-separated device ordinals, one per --tp rank [default: 0..tp-1]; "
      "with --nnodes, this process's GPU [default: 0]");
  app.add_option("--nnodes", o.nnodes,
                 "Processes (nodes) of a multi-process tensor-parallel group, "
                 "one rank each (a CPU rank, or with --backend cuda the GPU "
                 "of --devices)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  auto *node_rank_opt =
      app.add_option("--node-rank", o.node_rank,
                     "This process's rank in --nnodes (0 serves HTTP)")
          ->capture_default_str()
          ->check(CLI::Range(0, 63));
  app.add_option("--master-addr", o.master_addr,
                 "Host of the --node-rank 0 process (rendezvous)")
      ->capture_default_str();
  app.add_option("--master-port", o.master_port,
                 "Rendezvous port on --master-addr")
      ->capture_default_str()
      ->check(CLI::Range(1, 65535));
  app.add_option("--join-timeout", o.join_timeout_s,
                 "Seconds a rank waits at start for the others (rendezvous, "
                 "then their loading)")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  app.add_flag("--no-prefix-reuse", no_prefix_reuse,
               "Do not reuse cached prompt prefixes (cold prefill)");
  int prefix_snapshots = 0;
  auto *snapshots_opt = app.add_option("--prefix-snapshots", prefix_snapshots,
                                       "GDN state snapshots the prefix cache "
                                       "keeps (hybrid models) [default: 2 x "
                                       "--max-concurrency]")
                            ->check(CLI::Range(1, 1 << 20));
  bool mmap = false, no_mmap = false;
  auto *mmap_opt = app.add_flag(
      "--mmap", mmap,
      "Decode from the mapped artifact's page cache (the default on a GPU, "
      "which uploads from it)");
  app.add_flag("--no-mmap", no_mmap,
               "Copy the weights into huge-page host memory (the default on "
               "the CPU backend: faster decode, the weights stay resident)")
      ->excludes(mmap_opt);
  app.add_flag("--verify", verify,
               "Check every tensor checksum of the artifact at load (header "
               "checks always run)");
  app.add_flag("--greedy", o.greedy,
               "Greedy (argmax) decoding for every request");
  app.add_option("--spec", spec, "Speculative decoding method")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "mtp", "dflash2"}));
  auto *draft_opt =
      app.add_option(
             "--draft-tokens", draft_tokens,
             "Tokens drafted per step (K) [default: the drafter's default]")
          ->check(CLI::Range(1, 64));
  app.add_flag("--lm-head-draft", o.lm_head_draft,
               "Use the artifact's reduced-vocabulary draft lm_head");
  app.add_option("--log-jsonl", o.log_jsonl,
                 "Append one JSON line per finished request to PATH");
  app.add_option("--api-key", api_keys,
                 "Require this bearer key on /v1/* (comma-separated for "
                 "several; also read from NINFER_API_KEY, "
                 "which keeps it out of the process list)")
      ->envname("NINFER_API_KEY");
  app.add_option("--cors-origin", cors_origins,
                 "Browser origins (scheme://host[:port], comma-separated, or "
                 "*) whose pages may call the API "
                 "[default: none, no CORS headers]");
  app.add_option("--served-model-name", o.served_model_name,
                 "Model id reported and accepted by the API [default: the "
                 "artifact's name]");
  auto *budget_opt =
      app.add_option("--reasoning-budget", reasoning_budget,
                     "Most reasoning tokens per request [default: the "
                     "artifact's generation config "
                     "reasoning_budget, else unlimited] (-1: unlimited, the "
                     "artifact's default ignored)")
          ->check(CLI::Range(int64_t{-1}, std::numeric_limits<int64_t>::max()));
  app.add_option("--tool-call-parser", o.tool_call_parser,
                 "Tool-call markup parsed out of answers: auto (from the "
                 "artifact's chat template), xml "
                 "(Qwen3.5 / Qwen3-Coder <function=…>), hermes "
                 "(<tool_call>{json}), none (answers stay text)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "xml", "hermes", "none"}));
  app.add_option(
         "--backend", o.backend,
         "Where the model runs: auto (CUDA when this build has it and "
         "--devices' first GPU exists, else the "
         "CPU), cpu, or cuda (fails at start without a CUDA build or the GPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--threads", o.threads, "CPU threads (0: all cores)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  app.add_option("--max-connections", o.max_connections,
                 "Open HTTP connections served at once (one worker thread "
                 "each); more are answered 503 and closed")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  app.add_option("--max-connections-per-client", o.max_connections_per_client,
                 "Open HTTP connections from one client address; more are "
                 "answered 503 and closed (0: no limit; "
                 "behind a proxy every client has the proxy's address)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65536));
  app.add_option("--keep-alive-timeout", o.keep_alive_timeout_s,
                 "Seconds an idle keep-alive connection is kept open")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  app.add_option("--read-timeout", o.read_timeout_s,
                 "Seconds within which a request's line and headers must "
                 "arrive, and the longest stall of its body "
                 "(408 after it)")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  app.add_option("--drain-timeout", o.drain_timeout_s,
                 "On SIGTERM or SIGINT, seconds the requests in flight may "
                 "take to finish (new ones get 503) before "
                 "they are cancelled; a second signal cancels at once; 0 "
                 "cancels at once")
      ->capture_default_str()
      ->check(CLI::Range(0, 86400));

  std::string device_memory;
  app.add_flag("--plan-only", o.plan_only,
               "Print the per-device memory plan and exit: 0 when it fits, 1 "
               "with the shortfall when not; loads no "
               "weights and needs no GPU (docs/memory-plan.md)");
  auto *device_memory_opt =
      app.add_option("--device-memory", device_memory,
                     "Free memory of each device, e.g. 16GiB, 15.5G, 16000MiB: "
                     "stands in for the GPU's own reading, and caps it");
  auto *plan_config_opt =
      app.add_option("--plan-config", o.plan_config,
                     "With --plan-only: plan a Hugging Face config.json "
                     "instead of the --model artifact");
  auto *plan_quant_opt =
      app.add_option("--plan-quant", o.plan_quant,
                     "With --plan-config: nvfp4 (ninfer-pack --quant nvfp4, "
                     "default keep-bf16 policy), "
                     "nvfp4-head (the same with --quant-lm-head nvfp4) or bf16")
          ->check(CLI::IsMember({"nvfp4", "nvfp4-head", "bf16"}));
  auto *plan_dflash2_opt =
      app.add_option("--plan-dflash2-config", o.plan_dflash2_config,
                     "With --plan-config and --spec dflash2: the DFlash "
                     "drafter's Hugging Face config.json");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &) {
    return {std::nullopt, 0, app.help()};
  } catch (const CLI::CallForAllHelp &) {
    return {std::nullopt, 0, app.help("", CLI::AppFormatMode::All)};
  } catch (const CLI::CallForVersion &) {
    return {std::nullopt, 0,
            std::string("ninfer-serve ") + NINFER_VERSION + "\n"};
  } catch (const CLI::ParseError &e) {
    return usage_error(e.what());
  }

  if (o.model.empty())
    return usage_error(
        "--model: no artifact given and no embedded default model");
  if (o.host.empty())
    return usage_error("--host: must not be empty");
  if (*max_context_opt)
    o.max_context = max_context;
  if (kv_capacity != "auto") {
    int64_t n = 0;
    if (!parse_int64(kv_capacity, n) || n < 1)
      return usage_error(fmt::format(
          "--kv-capacity: '{}' is neither a positive token count nor auto",
          kv_capacity));
    o.kv_capacity = n;
    if (o.max_context && n < *o.max_context)
      return usage_error(fmt::format("--kv-capacity: {} tokens cannot hold one "
                                     "sequence of --max-context {} tokens",
                                     n, *o.max_context));
  }
  o.kv_dtype = kv_dtype == "int8"   ? KvDtype::kInt8
               : kv_dtype == "bf16" ? KvDtype::kBf16
               : kv_dtype == "f16"  ? KvDtype::kF16
                                    : KvDtype::kF32;
  o.nvfp4_w4a16 = nvfp4_activations == "w4a16";
  o.bf16_activations = dense_activations == "bf16";
  o.cuda_graphs = cuda_graphs == "on";
  o.spec = spec == "mtp"       ? SpecMethod::kMtp
           : spec == "dflash2" ? SpecMethod::kDflash2
                               : SpecMethod::kNone;
  if (o.nnodes > 1) {
    if (o.node_rank >= o.nnodes)
      return usage_error(
          fmt::format("--node-rank {}: outside --nnodes {} (0 to {})",
                      o.node_rank, o.nnodes, o.nnodes - 1));
    if (tp_opt->count() > 0 && o.tp != o.nnodes)
      return usage_error(fmt::format("--tp {} with --nnodes {}: each process "
                                     "runs one rank, so --tp must equal "
                                     "--nnodes (or be left out)",
                                     o.tp, o.nnodes));
    o.tp = o.nnodes;
  } else if (*node_rank_opt && o.node_rank != 0) {
    return usage_error(
        fmt::format("--node-rank {}: needs --nnodes greater than {}",
                    o.node_rank, o.node_rank));
  }
  if (*devices_opt) {
    for (const std::string &d : split_commas(devices)) {
      int64_t n = 0;
      if (!parse_int64(d, n) || n < 0 || n > 1024)
        return usage_error(fmt::format(
            "--devices: '{}' is not a comma-separated list of device ordinals",
            devices));
      for (int prev : o.devices)
        if (prev == n)
          return usage_error(
              fmt::format("--devices: device {} is listed twice", n));
      o.devices.push_back(static_cast<int>(n));
    }
    // With --nnodes each process is one rank: --devices names its own GPU.
    const int local_ranks = o.nnodes > 1 ? 1 : o.tp;
    if (static_cast<int>(o.devices.size()) != local_ranks)
      return usage_error(
          o.nnodes > 1
              ? fmt::format("--devices: lists {} device(s) but with --nnodes "
                            "each process runs one rank: give this "
                            "process's GPU",
                            o.devices.size())
              : fmt::format("--devices: lists {} device(s) but --tp is {}; "
                            "give one per rank",
                            o.devices.size(), o.tp));
  }
  o.prefix_reuse = !no_prefix_reuse;
  if (*snapshots_opt) {
    if (!o.prefix_reuse)
      return usage_error(
          "--prefix-snapshots: prefix reuse is off (--no-prefix-reuse)");
    o.prefix_snapshots = prefix_snapshots;
  }
  o.verify = verify;
  if (mmap || no_mmap)
    o.mmap = mmap;
  if (*draft_opt) {
    if (o.spec == SpecMethod::kNone)
      return usage_error("--draft-tokens: needs --spec mtp or --spec dflash2");
    o.draft_tokens = draft_tokens;
  }
  if (o.lm_head_draft && o.spec == SpecMethod::kNone)
    return usage_error("--lm-head-draft: needs --spec mtp or --spec dflash2");
  if (!api_keys.empty()) {
    for (std::string &k : split_commas(api_keys)) {
      if (k.empty())
        return usage_error("--api-key: empty key in the list");
      o.api_keys.push_back(std::move(k));
    }
  }
  if (!cors_origins.empty()) {
    for (std::string &origin : split_commas(cors_origins)) {
      const bool ok =
          origin == "*" ||
          ((origin.rfind("http://", 0) == 0 ||
            origin.rfind("https://", 0) == 0) &&
           origin.find('/', origin.find("//") + 2) == std::string::npos);
      if (!ok)
        return usage_error(fmt::format("--cors-origin: '{}' is not an origin "
                                       "such as https://app.example.com or *",
                                       origin));
      o.cors_origins.push_back(std::move(origin));
    }
  }
  if (*budget_opt && reasoning_budget >= 0)
    o.reasoning_budget = reasoning_budget;
  if (*budget_opt && reasoning_budget < 0)
    o.reasoning_budget_unlimited = true;
  if (*device_memory_opt) {
    o.device_memory = parse_byte_size(device_memory);
    if (!o.device_memory)
      return usage_error(fmt::format("--device-memory: '{}' is not a size such "
                                     "as 16GiB, 15.5G or 16000MiB",
                                     device_memory));
  }
  if (*plan_config_opt && !o.plan_only)
    return usage_error("--plan-config: needs --plan-only");
  if (*plan_quant_opt && !*plan_config_opt)
    return usage_error("--plan-quant: needs --plan-config");
  if (*plan_dflash2_opt && !*plan_config_opt)
    return usage_error("--plan-dflash2-config: needs --plan-config");
  if (*plan_dflash2_opt && o.spec != SpecMethod::kDflash2)
    return usage_error("--plan-dflash2-config: needs --spec dflash2");

  if (auto gated = check_feature_gates(o, gates))
    return usage_error(*gated);
  return {std::move(o), 0, {}};
}

ParsedServeOptions parse_serve_options(const std::vector<std::string> &args,
                                       const std::string &default_model,
                                       std::span<const FeatureGate> gates) {
  std::vector<const char *> argv;
  argv.reserve(args.size() + 1);
  for (const std::string &a : args)
    argv.push_back(a.c_str());
  argv.push_back(nullptr);
  return parse_serve_options(static_cast<int>(args.size()), argv.data(),
                             default_model, gates);
}

std::string describe(const ServeOptions &o) {
  std::string s =
      fmt::format("--model {} --host {} --port {} --prefill-chunk {}", o.model,
                  o.host, o.port, o.prefill_chunk);
  s += o.max_context ? fmt::format(" --max-context {}", *o.max_context)
                     : std::string();
  s += o.kv_capacity ? fmt::format(" --kv-capacity {}", *o.kv_capacity)
                     : " --kv-capacity auto";
  s += fmt::format(" --kv-dtype {} --nvfp4-activations {} "
                   "--dense-activations {} --max-concurrency {} "
                   "--backend {} --tp {}",
                   kv_dtype_name(o.kv_dtype), o.nvfp4_w4a16 ? "w4a16" : "w4a4",
                   o.bf16_activations ? "bf16" : "f32", o.max_concurrency,
                   o.backend, o.tp);
  if (!o.devices.empty())
    s += fmt::format(" --devices {}", fmt::join(o.devices, ","));
  if (o.nnodes > 1)
    s += fmt::format(" --nnodes {} --node-rank {} --master-addr {} "
                     "--master-port {} --join-timeout {}",
                     o.nnodes, o.node_rank, o.master_addr, o.master_port,
                     o.join_timeout_s);
  if (!o.prefix_reuse)
    s += " --no-prefix-reuse";
  if (o.prefix_snapshots)
    s += fmt::format(" --prefix-snapshots {}", *o.prefix_snapshots);
  if (o.cuda_graphs)
    s += " --cuda-graphs on";
  if (o.mmap)
    s += *o.mmap ? " --mmap" : " --no-mmap";
  if (o.verify)
    s += " --verify";
  if (o.greedy)
    s += " --greedy";
  s += fmt::format(" --spec {}", spec_method_name(o.spec));
  if (o.draft_tokens)
    s += fmt::format(" --draft-tokens {}", *o.draft_tokens);
  if (o.lm_head_draft)
    s += " --lm-head-draft";
  if (!o.log_jsonl.empty())
    s += fmt::format(" --log-jsonl {}", o.log_jsonl);
  if (!o.api_keys.empty())
    s += fmt::format(" --api-key <{} key(s)>", o.api_keys.size());
  if (!o.cors_origins.empty())
    s += " --cors-origin " + fmt::format("{}", fmt::join(o.cors_origins, ","));
  if (!o.served_model_name.empty())
    s += fmt::format(" --served-model-name {}", o.served_model_name);
  if (o.reasoning_budget)
    s += fmt::format(" --reasoning-budget {}", *o.reasoning_budget);
  if (o.reasoning_budget_unlimited)
    s += " --reasoning-budget -1";
  if (o.tool_call_parser != "auto")
    s += fmt::format(" --tool-call-parser {}", o.tool_call_parser);
  s += fmt::format(" --threads {} --max-connections {}", o.threads,
                   o.max_connections);
  if (o.max_connections_per_client > 0)
    s += fmt::format(" --max-connections-per-client {}",
                     o.max_connections_per_client);
  s += fmt::format(
      " --keep-alive-timeout {} --read-timeout {} --drain-timeout {}",
      o.keep_alive_timeout_s, o.read_timeout_s, o.drain_timeout_s);
  if (o.device_memory)
    s += fmt::format(" --device-memory {}", *o.device_memory);
  if (o.plan_only)
    s += " --plan-only";
  if (!o.plan_config.empty())
    s += fmt::format(" --plan-config {} --plan-quant {}", o.plan_config,
                     o.plan_quant);
  if (!o.plan_dflash2_config.empty())
    s += fmt::format(" --plan-dflash2-config {}", o.plan_dflash2_config);
  return s;
}

bool weights_resident(const ServeOptions &o, bool cpu_backend) {
  if (o.mmap)
    return !*o.mmap;
  return cpu_backend;
}

std::vector<std::string_view> served_sections(const ServeOptions &o) {
  std::vector<std::string_view> s{"main"};
  if (o.spec == SpecMethod::kMtp)
    s.push_back("mtp");
  if (o.spec == SpecMethod::kDflash2)
    s.push_back("dflash2");
  if (o.spec != SpecMethod::kNone && o.lm_head_draft)
    s.push_back("draft_lm_head");
  return s;
}

} // namespace ninfer::server
