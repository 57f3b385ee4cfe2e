// Tests of ninfer-serve's flags: defaults, the seed's command line, bad values (exit 2, flag named), gates.
#include <gtest/gtest.h>

#include <cstdlib>

#include "server/http_server.h"
#include "server/serve_options.h"

namespace ninfer::server {
namespace {

constexpr FeatureGate kAllBuilt[] = {
    {"--tp", "tensor parallelism", [](const ServeOptions& o) { return o.tp > 1; }, true},
};

ParsedServeOptions parse(std::vector<std::string> args, std::span<const FeatureGate> gates = default_feature_gates()) {
  args.insert(args.begin(), "ninfer-serve");
  return parse_serve_options(args, "/models/default.ninfer", gates);
}

void expect_usage_error(std::vector<std::string> args, const std::string& flag) {
  ParsedServeOptions r = parse(args, {});
  EXPECT_FALSE(r.options.has_value()) << "args accepted: " << ::testing::PrintToString(args);
  EXPECT_EQ(r.exit_code, 2) << r.message;
  EXPECT_NE(r.message.find(flag), std::string::npos) << "message does not name " << flag << ": " << r.message;
}

TEST(ServeOptions, Defaults) {
  ParsedServeOptions r = parse({});
  ASSERT_TRUE(r.options) << r.message;
  const ServeOptions& o = *r.options;
  EXPECT_EQ(o.model, "/models/default.ninfer");
  EXPECT_EQ(o.host, "127.0.0.1");
  EXPECT_EQ(o.port, 8080);
  EXPECT_EQ(o.prefill_chunk, 2048);
  EXPECT_FALSE(o.max_context);
  EXPECT_FALSE(o.kv_capacity);  // auto
  EXPECT_EQ(o.kv_dtype, KvDtype::kBf16);
  EXPECT_EQ(o.tp, 1);
  EXPECT_TRUE(o.devices.empty());
  EXPECT_TRUE(o.prefix_reuse);
  EXPECT_FALSE(o.greedy);
  EXPECT_EQ(o.spec, SpecMethod::kNone);
  EXPECT_FALSE(o.draft_tokens);
  EXPECT_FALSE(o.lm_head_draft);
  EXPECT_TRUE(o.log_jsonl.empty());
  EXPECT_TRUE(o.api_keys.empty());
  EXPECT_FALSE(o.reasoning_budget);
  EXPECT_EQ(o.threads, 0);
}

TEST(ServeOptions, SeedCommandLineParsesWhenFeaturesAreBuilt) {
  // The seed report's flags, verbatim.
  std::vector<std::string> seed = {"--model", "F:/models/a.ninfer", "--prefill-chunk", "2048", "--max-context",
                                   "196608", "--kv-capacity", "196608", "--kv-dtype", "int8", "--max-concurrency",
                                   "1", "--tp", "2", "--devices", "0,1", "--no-prefix-reuse", "--greedy", "--spec",
                                   "mtp", "--draft-tokens", "3", "--lm-head-draft", "--log-jsonl", "run.jsonl",
                                   "--api-key", "k1,k2", "--served-model-name", "qwen", "--reasoning-budget", "8192",
                                   "--threads", "16", "--host", "0.0.0.0", "--port", "9000"};
  ParsedServeOptions r = parse(seed, {});
  ASSERT_TRUE(r.options) << r.message;
  const ServeOptions& o = *r.options;
  EXPECT_EQ(o.model, "F:/models/a.ninfer");
  EXPECT_EQ(*o.max_context, 196608);
  EXPECT_EQ(*o.kv_capacity, 196608);
  EXPECT_EQ(o.kv_dtype, KvDtype::kInt8);
  EXPECT_EQ(o.max_concurrency, 1);
  EXPECT_EQ(o.tp, 2);
  EXPECT_EQ(o.devices, (std::vector<int>{0, 1}));
  EXPECT_FALSE(o.prefix_reuse);
  EXPECT_TRUE(o.greedy);
  EXPECT_EQ(o.spec, SpecMethod::kMtp);
  EXPECT_EQ(*o.draft_tokens, 3);
  EXPECT_TRUE(o.lm_head_draft);
  EXPECT_EQ(o.log_jsonl, "run.jsonl");
  EXPECT_EQ(o.api_keys, (std::vector<std::string>{"k1", "k2"}));
  EXPECT_EQ(o.served_model_name, "qwen");
  EXPECT_EQ(*o.reasoning_budget, 8192);
  EXPECT_EQ(o.threads, 16);
  EXPECT_EQ(o.host, "0.0.0.0");
  EXPECT_EQ(o.port, 9000);
  const std::string d = describe(o);
  EXPECT_NE(d.find("--kv-dtype int8"), std::string::npos) << d;
  EXPECT_NE(d.find("--devices 0,1"), std::string::npos) << d;
  EXPECT_EQ(d.find("k1"), std::string::npos) << "describe() must not print API keys: " << d;

  HttpServerConfig c = http_config_from(o);
  EXPECT_EQ(c.port, 9000);
  EXPECT_TRUE(c.force_greedy);
  EXPECT_EQ(*c.reasoning_budget, 8192);
  EXPECT_EQ(c.log_jsonl_path, "run.jsonl");
  EXPECT_EQ(c.served_model_name, "qwen");
  EXPECT_EQ(c.api_keys.size(), 2u);
}

TEST(ServeOptions, MaxNBoundsChoicesPerRequest) {
  ParsedServeOptions d = parse({});
  ASSERT_TRUE(d.options) << d.message;
  EXPECT_EQ(d.options->max_n, 16);
  EXPECT_EQ(http_config_from(*d.options).max_n, 16);
  ParsedServeOptions r = parse({"--max-n", "4"});
  ASSERT_TRUE(r.options) << r.message;
  EXPECT_EQ(http_config_from(*r.options).max_n, 4);
  EXPECT_GE(http_config_from(*r.options).max_in_flight, 64);  // one request of --max-n choices always fits
  EXPECT_FALSE(parse({"--max-n", "0"}).options);
  EXPECT_FALSE(parse({"--max-n", "65"}).options);
}

TEST(ServeOptions, PrefixSnapshotsAreParsedDescribedAndNeedPrefixReuse) {
  ParsedServeOptions r = parse({"--prefix-snapshots", "6"});
  ASSERT_TRUE(r.options) << r.message;
  EXPECT_EQ(*r.options->prefix_snapshots, 6);
  EXPECT_NE(describe(*r.options).find("--prefix-snapshots 6"), std::string::npos) << describe(*r.options);
  EXPECT_FALSE(parse({}).options->prefix_snapshots);  // unset: the engine's default (2 × --max-concurrency)
  expect_usage_error({"--prefix-snapshots", "4", "--no-prefix-reuse"}, "--prefix-snapshots");
  expect_usage_error({"--prefix-snapshots", "0"}, "--prefix-snapshots");
}

TEST(ServeOptions, MmapOrReadIntoMemory) {
  const ServeOptions d = *parse({}).options;
  EXPECT_FALSE(d.mmap);
  EXPECT_TRUE(weights_resident(d, true));    // the CPU backend at --tp 1 reads the file
  EXPECT_FALSE(weights_resident(d, false));  // a GPU uploads from the mapping
  const ServeOptions tp2 = *parse({"--tp", "2"}, kAllBuilt).options;
  EXPECT_TRUE(weights_resident(tp2, true));  // CPU ranks too (what they copy into shards stays mapped)
  const ServeOptions m = *parse({"--mmap"}).options;
  EXPECT_FALSE(weights_resident(m, true));
  EXPECT_NE(describe(m).find(" --mmap"), std::string::npos) << describe(m);
  const ServeOptions n = *parse({"--no-mmap", "--tp", "2"}, kAllBuilt).options;
  EXPECT_TRUE(weights_resident(n, true));
  EXPECT_TRUE(weights_resident(n, false));
  EXPECT_EQ(served_sections(d), (std::vector<std::string_view>{"main"}));
  EXPECT_EQ(served_sections(*parse({"--spec", "mtp", "--lm-head-draft"}).options),
            (std::vector<std::string_view>{"main", "mtp", "draft_lm_head"}));
  EXPECT_EQ(served_sections(*parse({"--spec", "dflash2"}).options), (std::vector<std::string_view>{"main", "dflash2"}));
  EXPECT_NE(describe(n).find(" --no-mmap"), std::string::npos) << describe(n);
  expect_usage_error({"--mmap", "--no-mmap"}, "--mmap");
}

TEST(ServeOptions, BadValuesExitTwoAndNameTheFlag) {
  expect_usage_error({"--port", "70000"}, "--port");
  expect_usage_error({"--port", "abc"}, "--port");
  expect_usage_error({"--prefill-chunk", "0"}, "--prefill-chunk");
  expect_usage_error({"--max-context", "-5"}, "--max-context");
  expect_usage_error({"--kv-capacity", "lots"}, "--kv-capacity");
  expect_usage_error({"--kv-capacity", "0"}, "--kv-capacity");
  expect_usage_error({"--max-context", "4096", "--kv-capacity", "1024"}, "--kv-capacity");
  expect_usage_error({"--kv-dtype", "fp8"}, "--kv-dtype");
  expect_usage_error({"--nvfp4-activations", "w8a8"}, "--nvfp4-activations");
  expect_usage_error({"--dense-activations", "f16"}, "--dense-activations");
  expect_usage_error({"--max-concurrency", "0"}, "--max-concurrency");
  expect_usage_error({"--tp", "0"}, "--tp");
  expect_usage_error({"--devices", "0,x"}, "--devices");
  expect_usage_error({"--devices", "0,0", "--tp", "2"}, "--devices");
  expect_usage_error({"--devices", "0,1"}, "--devices");  // two devices for --tp 1
  expect_usage_error({"--spec", "eagle"}, "--spec");
  expect_usage_error({"--draft-tokens", "3"}, "--draft-tokens");  // no --spec
  expect_usage_error({"--spec", "mtp", "--draft-tokens", "0"}, "--draft-tokens");
  expect_usage_error({"--lm-head-draft"}, "--lm-head-draft");
  expect_usage_error({"--api-key", "a,,b"}, "--api-key");
  expect_usage_error({"--reasoning-budget", "-2"}, "--reasoning-budget");
  expect_usage_error({"--threads", "-1"}, "--threads");
  expect_usage_error({"--host", ""}, "--host");
  expect_usage_error({"--no-such-flag"}, "--no-such-flag");
}

void set_env(const char* name, const char* value) {
#ifdef _WIN32
  _putenv_s(name, value ? value : "");
#else
  if (value) ::setenv(name, value, 1);
  else ::unsetenv(name);
#endif
}

TEST(ServeOptions, ApiKeyFromTheEnvironment) {
  set_env("NINFER_API_KEY", "env-key");
  ParsedServeOptions r = parse({});
  ParsedServeOptions flag = parse({"--api-key", "flag-key"});
  set_env("NINFER_API_KEY", nullptr);
  ASSERT_TRUE(r.options) << r.message;
  EXPECT_EQ(r.options->api_keys, (std::vector<std::string>{"env-key"}));
  ASSERT_TRUE(flag.options) << flag.message;
  EXPECT_EQ(flag.options->api_keys, (std::vector<std::string>{"flag-key"}));  // the flag wins
  EXPECT_TRUE(parse({}).options->api_keys.empty());
}

TEST(ServeOptions, ReliabilityFlags) {
  ParsedServeOptions r = parse({"--cors-origin", "https://app.example,http://localhost:3000", "--drain-timeout", "5",
                                "--max-connections-per-client", "16"});
  ASSERT_TRUE(r.options) << r.message;
  EXPECT_EQ(r.options->cors_origins, (std::vector<std::string>{"https://app.example", "http://localhost:3000"}));
  EXPECT_EQ(r.options->drain_timeout_s, 5);
  EXPECT_EQ(r.options->max_connections_per_client, 16);
  const std::string line = describe(*r.options);
  EXPECT_NE(line.find("--cors-origin https://app.example,http://localhost:3000"), std::string::npos) << line;
  EXPECT_NE(line.find("--max-connections-per-client 16"), std::string::npos) << line;
  EXPECT_NE(line.find("--drain-timeout 5"), std::string::npos) << line;
  ParsedServeOptions d = parse({});
  ASSERT_TRUE(d.options);
  EXPECT_TRUE(d.options->cors_origins.empty());
  EXPECT_EQ(d.options->drain_timeout_s, 30);
  EXPECT_EQ(d.options->max_connections_per_client, 0);
  expect_usage_error({"--cors-origin", "https://app.example/path"}, "--cors-origin");
  expect_usage_error({"--cors-origin", "app.example"}, "--cors-origin");
  expect_usage_error({"--drain-timeout", "-1"}, "--drain-timeout");
  expect_usage_error({"--max-connections-per-client", "-3"}, "--max-connections-per-client");
}

TEST(ServeOptions, NoModelAtAll) {
  std::vector<std::string> args = {"ninfer-serve"};
  ParsedServeOptions r = parse_serve_options(args, "", {});
  EXPECT_FALSE(r.options);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.message.find("--model"), std::string::npos) << r.message;
}

TEST(ServeOptions, HelpListsEveryFlagAndExitsZero) {
  ParsedServeOptions r = parse({"--help"});
  EXPECT_FALSE(r.options);
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag : {"--model", "--host", "--port", "--prefill-chunk", "--max-context", "--kv-capacity",
                           "--kv-dtype", "--nvfp4-activations", "--dense-activations", "--max-concurrency", "--tp", "--devices", "--no-prefix-reuse", "--greedy",
                           "--spec", "--draft-tokens", "--lm-head-draft", "--log-jsonl", "--api-key",
                           "--served-model-name", "--reasoning-budget", "--tool-call-parser", "--threads", "--mmap",
                           "--no-mmap"})
    EXPECT_NE(r.message.find(flag), std::string::npos) << flag << " missing from --help";
  ParsedServeOptions v = parse({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.message.find(NINFER_VERSION), std::string::npos);
}

// --reasoning-budget: absent leaves the artifact's default in force; -1 says unlimited (and drops that default);
// 0 or more is the server's budget.
TEST(ServeOptions, ReasoningBudgetAbsentUnlimitedOrGiven) {
  ParsedServeOptions d = parse({});
  ASSERT_TRUE(d.options) << d.message;
  EXPECT_FALSE(d.options->reasoning_budget);
  EXPECT_FALSE(d.options->reasoning_budget_unlimited);
  ParsedServeOptions u = parse({"--reasoning-budget", "-1"});
  ASSERT_TRUE(u.options) << u.message;
  EXPECT_FALSE(u.options->reasoning_budget);
  EXPECT_TRUE(u.options->reasoning_budget_unlimited);
  EXPECT_NE(describe(*u.options).find("--reasoning-budget -1"), std::string::npos) << describe(*u.options);
  EXPECT_FALSE(http_config_from(*u.options).reasoning_budget);
  ParsedServeOptions z = parse({"--reasoning-budget", "0"});
  ASSERT_TRUE(z.options) << z.message;
  EXPECT_EQ(z.options->reasoning_budget, std::optional<int64_t>(0));
  EXPECT_FALSE(z.options->reasoning_budget_unlimited);
}

TEST(ServeOptions, ToolCallParser) {
  ParsedServeOptions d = parse({});
  ASSERT_TRUE(d.options) << d.message;
  EXPECT_EQ(d.options->tool_call_parser, "auto");
  EXPECT_EQ(describe(*d.options).find("--tool-call-parser"), std::string::npos);
  for (const char* v : {"xml", "hermes", "none", "auto"}) {
    ParsedServeOptions r = parse({"--tool-call-parser", v});
    ASSERT_TRUE(r.options) << r.message;
    EXPECT_EQ(r.options->tool_call_parser, v);
  }
  EXPECT_NE(describe(*parse({"--tool-call-parser", "hermes"}).options).find("--tool-call-parser hermes"),
            std::string::npos);
  expect_usage_error({"--tool-call-parser", "json"}, "--tool-call-parser");
}

TEST(ServeOptions, Int8KvAndNvfp4ActivationModes) {
  ParsedServeOptions d = parse({});
  ASSERT_TRUE(d.options) << d.message;
  EXPECT_FALSE(d.options->nvfp4_w4a16);  // W4A4 by default, as the seed's artifacts run
  ParsedServeOptions r = parse({"--kv-dtype", "int8", "--nvfp4-activations", "w4a16"});  // default gates
  ASSERT_TRUE(r.options) << r.message;
  EXPECT_EQ(r.options->kv_dtype, KvDtype::kInt8);
  EXPECT_TRUE(r.options->nvfp4_w4a16);
  EXPECT_NE(describe(*r.options).find("--nvfp4-activations w4a16"), std::string::npos) << describe(*r.options);
  ParsedServeOptions a = parse({"--nvfp4-activations", "w4a4"});
  ASSERT_TRUE(a.options) << a.message;
  EXPECT_FALSE(a.options->nvfp4_w4a16);
  EXPECT_FALSE(d.options->bf16_activations);  // f32 activations by default
  EXPECT_NE(describe(*d.options).find("--dense-activations f32"), std::string::npos) << describe(*d.options);
  ParsedServeOptions b = parse({"--dense-activations", "bf16"});
  ASSERT_TRUE(b.options) << b.message;
  EXPECT_TRUE(b.options->bf16_activations);
  EXPECT_NE(describe(*b.options).find("--dense-activations bf16"), std::string::npos) << describe(*b.options);
}

// The gate mechanism, with a table of this test's own (every gate of this build is built today).
constexpr FeatureGate kSomeUnbuilt[] = {
    {"--spec mtp", "MTP speculative decoding", [](const ServeOptions& o) { return o.spec == SpecMethod::kMtp; }, true},
    {"--lm-head-draft", "the reduced-vocabulary draft lm_head", [](const ServeOptions& o) { return o.lm_head_draft; },
     true},
    {"--tp", "tensor parallelism", [](const ServeOptions& o) { return o.tp > 1; }, false},
};

TEST(ServeOptions, UnbuiltFeaturesFailAtStartNamingTheFlag) {
  ParsedServeOptions r = parse({"--spec", "mtp", "--draft-tokens", "3", "--lm-head-draft", "--tp", "2"}, kSomeUnbuilt);
  EXPECT_FALSE(r.options);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.message.find("--tp: tensor parallelism"), std::string::npos) << r.message;
  // MTP speculation and the draft head are built: only the unbuilt flag is named.
  EXPECT_EQ(r.message.find("--spec mtp"), std::string::npos) << r.message;
  EXPECT_EQ(r.message.find("--lm-head-draft"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("not built yet"), std::string::npos) << r.message;
  ParsedServeOptions mtp = parse({"--spec", "mtp", "--draft-tokens", "3", "--lm-head-draft"}, kSomeUnbuilt);
  ASSERT_TRUE(mtp.options) << mtp.message;

  // The same flag passes once its gate is flipped.
  ParsedServeOptions ok = parse({"--tp", "2"}, kAllBuilt);
  ASSERT_TRUE(ok.options) << ok.message;
  EXPECT_EQ(ok.options->tp, 2);

  // Every default gate names a flag and is not in use by the defaults.
  ServeOptions defaults;
  for (const FeatureGate& g : default_feature_gates()) {
    EXPECT_FALSE(g.flag.empty());
    EXPECT_FALSE(g.in_use(defaults)) << g.flag;
  }
  EXPECT_FALSE(check_feature_gates(defaults, default_feature_gates()));
}

}  // namespace
}  // namespace ninfer::server
