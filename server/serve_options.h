// Owns ninfer-serve's command line: the flags (CLI11), their validation, and
// the not-yet-built gates.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ninfer::server {

enum class KvDtype { kInt8, kBf16, kF16, kF32 };
enum class SpecMethod { kNone, kMtp, kDflash2 };

std::string_view kv_dtype_name(KvDtype dtype);   // int8 | bf16 | f16 | f32
std::string_view spec_method_name(SpecMethod m); // none | mtp | dflash2

// Every flag of docs/cli.md. Unset optionals mean "the engine decides"
// (documented per flag).
struct ServeOptions {
  std::string model;              // --model: artifact path
  std::string host = "127.0.0.1"; // --host
  int port = 8080;                // --port (0: any free port)
  int64_t prefill_chunk =
      2048; // --prefill-chunk: prompt tokens per engine step
  std::optional<int64_t>
      max_context; // --max-context: unset = the model's maximum
  std::optional<int64_t>
      kv_capacity; // --kv-capacity N|auto: unset = auto (fit free memory)
  KvDtype kv_dtype = KvDtype::kBf16; // --kv-dtype
  bool nvfp4_w4a16 = false; // --nvfp4-activations w4a16 (default w4a4): NVFP4
                            // layers keep f32 inputs
  bool bf16_activations = false; // --dense-activations bf16 (default f32):
                                 // bf16-weight layers round their inputs
  int max_concurrency = 4;  // --max-concurrency: sequences decoded together
  int max_n = 16;           // --max-n: choices per request (`n`), 1..64
  bool cuda_graphs =
      false; // --cuda-graphs on|off: decode steps as recorded CUDA graphs
  std::string backend = "auto"; // --backend auto|cpu|cuda (auto: CUDA when
                                // built and a GPU is present)
  int tp = 1;                   // --tp: tensor-parallel ranks
  std::vector<int>
      devices; // --devices 0,1: one device per tp rank (unset = 0..tp-1)
  // Multi-process TP (torchrun's names; docs/parallel.md): one rank per
  // process, --node-rank 0 serves HTTP.
  int nnodes = 1;    // --nnodes
  int node_rank = 0; // --node-rank
  std::string master_addr =
      "127.0.0.1"; // --master-addr: where --node-rank 0 serves the rendezvous
  int master_port = 29500; // --master-port
  int join_timeout_s =
      300; // --join-timeout: start-up waits for the other ranks, in seconds
  bool prefix_reuse = true;            // --no-prefix-reuse turns it off
  std::optional<int> prefix_snapshots; // --prefix-snapshots N: unset = 2 ×
                                       // --max-concurrency (hybrid models)
  bool verify = false;                 // --verify: hash every tensor at load
  // --mmap / --no-mmap: map the artifact, or read it into huge-page host
  // memory (the sections served_sections() names); unset:
  // weights_resident() decides (docs/cli.md).
  std::optional<bool> mmap;
  bool greedy = false;                 // --greedy: argmax for every request
  SpecMethod spec = SpecMethod::kNone; // --spec
  std::optional<int>
      draft_tokens;           // --draft-tokens K: unset = the drafter's default
  bool lm_head_draft = false; // --lm-head-draft: reduced-vocab proposal head
  std::string log_jsonl;      // --log-jsonl PATH: one line per finished request
  std::vector<std::string> api_keys; // --api-key KEY[,KEY...]
  std::vector<std::string>
      cors_origins; // --cors-origin ORIGIN[,ORIGIN...]: empty = no CORS headers
  std::string
      served_model_name; // --served-model-name: unset = the artifact's name
  std::optional<int64_t>
      reasoning_budget; // --reasoning-budget N (0 or more); unset: the
                        // artifact's default, if any
  bool reasoning_budget_unlimited = false; // --reasoning-budget -1: no budget,
                                           // not even the artifact's default
  std::string tool_call_parser =
      "auto"; // --tool-call-parser auto|xml|hermes|none (auto: from the chat
              // template)
  int threads = 0; // --threads: CPU threads, 0 = all cores
  int max_connections =
      512; // --max-connections: open HTTP connections; more get 503
  int max_connections_per_client =
      0; // --max-connections-per-client: from one peer address (0: no limit)
  int keep_alive_timeout_s =
      5; // --keep-alive-timeout: idle connections closed after it
  int read_timeout_s =
      10; // --read-timeout: request headers within it; no body stall longer
  int drain_timeout_s = 30; // --drain-timeout: on SIGTERM/SIGINT, requests in
                            // flight finish within it
  bool plan_only = false;   // --plan-only: print the per-device memory plan and
                            // exit (0 fits, 1 not)
  std::optional<uint64_t> device_memory; // --device-memory SIZE: each device's
                                         // free memory (caps a real device)
  std::string plan_config; // --plan-config config.json: plan a Hugging Face
                           // config instead of --model
  std::string plan_quant = "nvfp4"; // --plan-quant nvfp4|nvfp4-head|bf16: the
                                    // quantization --plan-config assumes
  std::string plan_dflash2_config;  // --plan-dflash2-config config.json: the
                                    // DFlash drafter's shape
};

// "16GiB", "15.5G", "16000MiB", "17179869184": bytes. K/M/G/T and
// KiB/MiB/GiB/TiB are powers of 1024, KB/MB/GB/TB powers of 1000, B or no unit
// bytes; case-insensitive. nullopt for anything else, zero, or an overflow.
std::optional<uint64_t> parse_byte_size(std::string_view text);

// A flag (or flag value) whose feature this build does not have yet. `in_use`
// says whether the options ask for it; `built` is flipped to true by the change
// that implements the feature.
struct FeatureGate {
  std::string_view flag;    // what the user typed, e.g. "--spec mtp"
  std::string_view feature; // what is missing, e.g. "MTP speculative decoding"
  bool (*in_use)(const ServeOptions &);
  bool built;
};

// The gates of this build (a table in serve_options.cpp).
std::span<const FeatureGate> default_feature_gates();

// Empty when every requested feature is built; otherwise one message naming
// each offending flag.
std::optional<std::string>
check_feature_gates(const ServeOptions &options,
                    std::span<const FeatureGate> gates);

// The parse result for the app: either options, or a message to print and an
// exit code (0 for --help / --version, printed on stdout; 2 for a bad flag
// value or a gated feature, on stderr).
struct ParsedServeOptions {
  std::optional<ServeOptions> options;
  int exit_code = 0;
  std::string message;
};

// Parses argv (argv[0] is the program name), validates values and cross-flag
// rules, then applies the feature gates. `default_model` is what --model
// defaults to (the embedded default model).
ParsedServeOptions parse_serve_options(
    int argc, const char *const *argv, const std::string &default_model,
    std::span<const FeatureGate> gates = default_feature_gates());
ParsedServeOptions parse_serve_options(
    const std::vector<std::string> &args, const std::string &default_model,
    std::span<const FeatureGate> gates = default_feature_gates());

// The options as flags, for the startup log ("--port 8080 --kv-dtype int8 …").
std::string describe(const ServeOptions &options);

// Whether the weights are copied into memory rather than read from the
// mapping: --no-mmap / --mmap when given, else when the CPU backend runs them
// (decode streams the weights each token and runs faster from huge-page
// memory; a GPU uploads from the mapping).
bool weights_resident(const ServeOptions &options, bool cpu_backend);
// The artifact sections the server runs: the model's, and the drafter's for
// --spec (with draft_lm_head for --lm-head-draft). A resident load copies
// these (Artifact::make_resident); the others stay mapped and unread.
std::vector<std::string_view> served_sections(const ServeOptions &options);

} // namespace ninfer::server
