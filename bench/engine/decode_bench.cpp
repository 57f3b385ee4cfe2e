// ninfer-bench-decode: decode tok/s (batch 1 and batch 8) and prefill tok/s of
// the CPU engine on a synthetic model (a Qwen3.5 hybrid sized by --gb, or a
// named shape: --shape), bf16 and its NVFP4 derivative (W4A4 and W4A16), next
// to the memory-bandwidth roofline measured in the same run.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/common/bandwidth.h"
#include "bench/common/request_waiter.h"
#include "bench/common/synthetic_checkpoint.h"
#include "bench/common/synthetic_model.h"
#include "engine/artifact/artifact.h"
#include "engine/backend/profiling_backend.h"
#include "engine/model/model_artifact.h"
#include "engine/runtime/engine.h"

namespace {

using namespace ninfer;

std::vector<RequestResult> run(Engine &e, int batch, int prompt_len,
                               int max_tokens, int vocab) {
  std::vector<std::shared_ptr<bench::RequestWaiter>> ws;
  for (int b = 0; b < batch; ++b) {
    EngineRequest r;
    for (int i = 0; i < prompt_len; ++i)
      r.prompt.push_back((i * 7919 + b * 104729) % vocab);
    r.sampling.greedy = true;
    r.max_tokens = max_tokens;
    auto w = std::make_shared<bench::RequestWaiter>();
    e.submit(r, w);
    ws.push_back(w);
  }
  std::vector<RequestResult> out;
  for (auto &w : ws)
    w->wait(), out.push_back(w->result);
  return out;
}

struct Measured {
  std::string variant, backend;
  double weight_gb = 0, decode1 = 0, decode_b = 0, prefill = 0;
  std::string prefill_ops = {},
              decode_ops = {}; // --profile-ops: the op tables of the prefill
                               // and batch-1 decode runs
};

struct Options {
  int threads = 2, tokens = 32, prompt = 512, batch = 8, prefill_chunk = 2048;
  bool prefill_only = false, profile_ops = false;
  bool mmap = false;  // decode from the mapping, not from the file read into memory (ninfer-serve --mmap)
};

Measured measure(const std::string &variant, const std::string &path,
                 Nvfp4Activations mode, const Options &o) {
  const int threads = o.threads, prompt = o.prompt, tokens = o.tokens,
            batch = o.batch;
  // As ninfer-serve's CPU backend does (--no-mmap, its default), unless --mmap.
  Artifact a = Artifact::open(path, {.show_progress = false, .resident = !o.mmap});
  ModelConfig c = load_model_config(a);
  // Bytes one batch-1 decode step streams: every weight once, except a tied
  // embedding next to a stored lm_head (w4a4-head): then the embedding gives
  // one row per token and the head is what the step reads.
  const bool own_head = a.find("lm_head.weight") != nullptr;
  uint64_t weight_bytes = 0;
  for (const auto &t : a.tensors())
    if (!(own_head && t.name == "model.embed_tokens.weight"))
      weight_bytes += t.bytes;
  auto profile = o.profile_ops ? std::make_shared<OpProfile>() : nullptr;
  Engine e(a, c,
           {.max_context = prompt + tokens + 16,
            .prefill_chunk = o.prefill_chunk,
            .max_concurrency = batch,
            .kv_dtype = DType::kBF16,
            .threads = threads,
            .nvfp4_activations = mode,
            .bf16_activations = variant == "bf16-act",
            .op_profile = profile});
  std::fprintf(stderr, "%s: warming up (pages the weights in)...\n",
               variant.c_str());
  run(e, 1, 8, 2, static_cast<int>(c.vocab_size));
  Measured m{variant, e.backend_name(), weight_bytes / 1e9};
  if (profile)
    profile->clear();
  auto pre = run(e, 1, prompt, 1, static_cast<int>(c.vocab_size));
  m.prefill = prompt / pre[0].timings.prefill_s;
  if (profile)
    m.prefill_ops = profile->table(), profile->clear();
  if (o.prefill_only)
    return m;
  auto one = run(e, 1, 16, tokens, static_cast<int>(c.vocab_size));
  m.decode1 = (tokens - 1) / one[0].timings.decode_s;
  if (profile)
    m.decode_ops = profile->table();
  auto many = run(e, batch, 16, tokens, static_cast<int>(c.vocab_size));
  double window = 0;
  for (const auto &r : many)
    window = std::max(window, r.timings.decode_s);
  m.decode_b = batch * (tokens - 1) / window;
  return m;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"ninfer-bench-decode: CPU decode/prefill throughput vs the "
               "memory-bandwidth roofline"};
  std::string dir = "/tmp/ninfer-bench-decode";
  double gb = 1.0;
  std::string shape = "qwen35";
  Options o;
  app.add_option("--dir", dir,
                 "scratch directory (the synthetic checkpoint and artifact are "
                 "kept for reruns)");
  app.add_option("--shape", shape,
                 "synthetic model: qwen35 (sized by --gb), qwen35-1b, "
                 "qwen3-0.6b (synthetic_checkpoint.h)");
  app.add_option("--gb", gb,
                 "bf16 weight bytes of the --shape qwen35 model in GB (1 GB ≈ "
                 "0.5B parameters)");
  app.add_option("--threads", o.threads, "CPU backend threads");
  app.add_option("--tokens", o.tokens, "decoded tokens per request");
  app.add_option("--prompt", o.prompt,
                 "prompt tokens of the prefill measurement");
  app.add_option("--prefill-chunk", o.prefill_chunk,
                 "the engine's prefill chunk (tokens of a prompt per step)");
  app.add_flag("--prefill-only", o.prefill_only,
               "measure the prefill only (no decode runs)");
  app.add_option("--batch", o.batch,
                 "sequences of the batched decode measurement");
  bool keep_hf = false;
  app.add_flag("--keep-hf", keep_hf,
               "keep the synthetic HF checkpoint in <dir>/hf (for converting "
               "it to GGUF)");
  std::string variants = "bf16,w4a4,w4a16";
  app.add_option("--variants", variants,
                 "comma-separated: bf16 (the packed model), w4a4 / w4a16 (its "
                 "NVFP4 derivative, activations NVFP4 / f32), "
                 "w4a4-head (the NVFP4 derivative with an nvfp4 lm_head too: "
                 "ninfer-pack --quant-lm-head nvfp4), bf16-act (the packed "
                 "model with --dense-activations bf16)");
  app.add_flag("--mmap", o.mmap,
               "decode from the mapped artifact (ninfer-serve --mmap); by "
               "default it is read into memory, as ninfer-serve's CPU backend "
               "does");
  app.add_flag("--profile-ops", o.profile_ops,
               "time every backend op (ProfilingBackend) and print where the "
               "prefill and the batch-1 decode spend it");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> wanted;
  {
    std::stringstream ss(variants);
    for (std::string v; std::getline(ss, v, ',');) {
      if (v != "bf16" && v != "w4a4" && v != "w4a16" && v != "w4a4-head" &&
          v != "bf16-act") {
        std::fprintf(stderr,
                     "--variants: unknown '%s' (bf16, w4a4, w4a16, w4a4-head, "
                     "bf16-act)\n",
                     v.c_str());
        return 2;
      }
      wanted.push_back(v);
    }
  }
  const auto wants = [&](auto pred) {
    return std::find_if(wanted.begin(), wanted.end(), pred) != wanted.end();
  };
  const bool need4 = wants([](auto &v) { return v == "w4a4" || v == "w4a16"; });
  const bool need4_head = wants([](auto &v) { return v == "w4a4-head"; });
  nlohmann::json config;
  try {
    config = bench::synthetic_config(shape, static_cast<uint64_t>(gb * 1e9));
  } catch (const std::invalid_argument &e) {
    std::fprintf(stderr, "--shape: %s\n", e.what());
    return 2;
  }
  const bench::SyntheticModel model =
      bench::prepare_synthetic_model(dir, config, need4, keep_hf, need4_head);
  const std::string &art = model.bf16;
  Artifact a = Artifact::open(art);
  ModelConfig c = load_model_config(a);
  std::vector<Measured> rows;
  for (const auto &v : wanted) {
    rows.push_back(measure(
        v,
        v == "bf16" || v == "bf16-act" ? art
        : v == "w4a4-head" ? model.nvfp4_head
                           : model.nvfp4,
        v == "w4a16" ? Nvfp4Activations::kFloat : Nvfp4Activations::kNvfp4, o));
  }

  const int threads = o.threads, prompt = o.prompt, batch = o.batch,
            tokens = o.tokens;
  const double copy_bw = bench::memcpy_bandwidth(size_t(1) << 30, threads, 5);
  const double read_bw = bench::read_bandwidth(size_t(1) << 30, threads, 5);
  fmt::print("model: synthetic {} ({}), {} layers ({} GDN + {} attention), "
             "hidden {}, intermediate {}, vocab {}, "
             "tied embeddings; prefill chunk {}\n",
             shape, architecture_name(c.arch), c.num_layers,
             c.num_linear_attention_layers(), c.num_full_attention_layers(),
             c.hidden_size, c.intermediate_size, c.vocab_size, o.prefill_chunk);
  fmt::print("memcpy bandwidth ({} threads): {:.2f} GB/s; read bandwidth: "
             "{:.2f} GB/s\n\n",
             threads, copy_bw / 1e9, read_bw / 1e9);
  if (o.prefill_only) {
    fmt::print("| variant | backend | weights GB | threads | prefill chunk | "
               "prefill {} tok/s |\n|---|---|---|---|---|---|\n",
               prompt);
    for (const auto &m : rows)
      fmt::print("| {} | {} | {:.3f} | {} | {} | {:.1f} |\n", m.variant,
                 m.backend, m.weight_gb, threads, o.prefill_chunk, m.prefill);
  } else {
    // Bytes one batch-1 decode step streams: every weight once (the tied
    // embedding table is the lm_head).
    fmt::print("| variant | backend | bytes per token GB (weights; a tied "
               "embedding beside a stored head excluded) | "
               "roofline memcpy / read tok/s | decode b1 tok/s | "
               "decode b{} tok/s | prefill {} tok/s | decode b1 vs {} "
               "|\n|---|---|---|---|---|---|---|---|\n",
               batch, prompt, rows.front().variant);
    for (const auto &m : rows) {
      fmt::print("| {} | {} | {:.3f} | {:.1f} / {:.1f} | {:.2f} | {:.2f} | "
                 "{:.1f} | {:.2f}x |\n",
                 m.variant, m.backend, m.weight_gb,
                 copy_bw / (m.weight_gb * 1e9), read_bw / (m.weight_gb * 1e9),
                 m.decode1, m.decode_b, m.prefill,
                 m.decode1 / rows.front().decode1);
    }
  }
  if (o.profile_ops) {
    fmt::print("\nOp profile (each op's wall time on the backend; the engine's "
               "own work between ops is not in it)\n");
    for (const auto &m : rows)
      fmt::print("\n{}: prefill of {} tokens\n\n{}\n{}: batch-1 decode of {} "
                 "tokens\n\n{}",
                 m.variant, prompt, m.prefill_ops, m.variant, tokens,
                 m.decode_ops);
  }
  return 0;
}
