// ninfer-bench-accuracy: KL divergence, top-1 agreement and perplexity of NVFP4
// W4A4 / W4A16 weights and bf16 / int8 KV caches against the reference (the
// artifact's own weights, f32 KV), teacher-forced over a fixed held-out text.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "bench/accuracy/bf16_artifact.h"
#include "bench/accuracy/heldout_text.h"
#include "bench/accuracy/logit_metrics.h"
#include "bench/accuracy/variant_runner.h"
#include "engine/artifact/artifact.h"
#include "engine/core/error.h"
#include "engine/core/progress.h"
#include "engine/model/model_artifact.h"
#include "engine/pack/packer.h"

namespace {

using namespace ninfer;
namespace fs = std::filesystem;

struct Options {
  std::vector<std::string> models;
  bool fixtures = false;
  std::string text =
      std::string(NINFER_SOURCE_ROOT) + "/bench/accuracy/data/heldout.jsonl";
  std::string tokenizer_from =
      std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";
  std::string dir = "/tmp/ninfer-bench-accuracy";
  std::string json;
  std::string variants = "bf16kv,int8kv,int8kv-chunked,w4a4,w4a16";
  std::string ref = "bf16"; // bf16: the weights rounded to bf16 when stored
                            // wider; shipped: as stored
  int threads = 2;
  int64_t tokens = 0, window = 512, small_chunk = 64;
};

struct VariantResult {
  bench::VariantSpec spec;
  bench::MetricSummary s;
  double seconds = 0;
};

struct ModelResult {
  std::string name, path, weights_dtype, ref_note, tokens_note;
  ModelConfig config;
  int64_t nvfp4_tensors = 0;
  double ref_seconds = 0;
  std::vector<VariantResult> variants;
};

// The dtype most of the artifact's projection bytes are stored in ("f32",
// "bf16", "nvfp4").
std::string weights_dtype(const Artifact &a) {
  std::map<std::string, uint64_t> bytes;
  for (const auto &t : a.tensors())
    if (t.section == "main" && t.shape.size() == 2 &&
        t.name.find("embed") == std::string::npos)
      bytes[std::string(dtype_name(t.dtype))] += t.bytes;
  std::string best;
  for (const auto &[k, v] : bytes)
    if (best.empty() || v > bytes[best])
      best = k;
  return best;
}

// A variant's weights column: the reference's dtype, "nvfp4", or "nvfp4 + nvfp4
// lm_head".
std::string weights_name(const bench::VariantSpec &v,
                         const std::string &ref_dtype) {
  if (!v.nvfp4_weights)
    return ref_dtype;
  return v.nvfp4_head ? "nvfp4 + nvfp4 lm_head" : "nvfp4";
}

ModelResult run_model(const std::string &model, const Options &o,
                      const Tokenizer &default_tok,
                      const std::vector<std::string> &wanted) {
  ModelResult r;
  r.name = fs::path(model).filename().string();
  if (r.name.ends_with(".ninfer"))
    r.name.resize(r.name.size() - 7);
  fs::create_directories(o.dir);
  std::string ref_path = model;
  if (fs::is_directory(
          model)) { // an HF checkpoint: packed as ninfer-pack would
    ref_path = (fs::path(o.dir) / (r.name + ".ninfer")).string();
    pack_artifact(
        {.hf_dir = model, .output = ref_path, .show_progress = false});
  }
  r.path = model;
  {
    const std::string stored = weights_dtype(Artifact::open(ref_path));
    r.ref_note = fmt::format("{} as stored", stored);
    if (o.ref == "bf16" &&
        stored != "bf16") { // the reference is a bf16 model: round the weights
                            // as torch would
      const std::string p16 =
          (fs::path(o.dir) / (r.name + "-bf16.ninfer")).string();
      const int64_t n = bench::write_bf16_artifact(ref_path, p16);
      ref_path = p16;
      r.ref_note =
          fmt::format("bf16, {} float tensors rounded from {}", n, stored);
    }
  }
  Artifact ref = Artifact::open(ref_path);
  r.config = load_model_config(ref);
  r.weights_dtype = weights_dtype(ref);

  std::vector<bench::VariantSpec> specs;
  for (const auto &v : wanted)
    specs.push_back(bench::variant_spec(v, o.small_chunk));
  // `ninfer-pack --from REF --quant nvfp4 [--quant-lm-head nvfp4]`: the default
  // policy and fused scale groups.
  std::unique_ptr<Artifact>
      art4[2]; // [0]: the lm_head as it is; [1]: nvfp4 too
  for (int head = 0; head < 2; ++head) {
    const bool wanted_here = std::any_of(
        specs.begin(), specs.end(), [&](const bench::VariantSpec &s) {
          return s.nvfp4_weights && s.nvfp4_head == (head == 1);
        });
    if (!wanted_here)
      continue;
    const std::string p4 =
        (fs::path(o.dir) /
         (r.name + (head ? "-nvfp4-head.ninfer" : "-nvfp4.ninfer")))
            .string();
    PackOptions po{
        .from_artifact = ref_path, .output = p4, .show_progress = false};
    po.quant.nvfp4 = true;
    po.quant.lm_head = head == 1;
    r.nvfp4_tensors = static_cast<int64_t>(
        pack_artifact(po)
            .quant.quantized); // the projections: the same for both
    art4[head] = std::make_unique<Artifact>(Artifact::open(p4));
  }

  // Tokens: the model's own tokenizer when the artifact has one, else the
  // default model's, ids taken modulo vocab.
  bench::HeldoutText text;
  const int64_t vocab = r.config.vocab_size;
  if (auto tj = ref.blob("tokenizer.json")) {
    text = bench::load_heldout(o.text, Tokenizer::from_json(*tj));
    r.tokens_note = "own tokenizer";
  } else {
    text = bench::load_heldout(o.text, default_tok);
    r.tokens_note = fmt::format("default model's tokenizer, id % {}", vocab);
  }
  for (auto &t : text.tokens)
    t = static_cast<int32_t>(t % vocab);
  const int64_t n =
      o.tokens > 0 ? std::min<int64_t>(o.tokens,
                                       static_cast<int64_t>(text.tokens.size()))
                   : static_cast<int64_t>(text.tokens.size());
  const int64_t windows = (n - 1) / o.window;
  if (windows < 1)
    fail(ErrorKind::kInvalidArgument,
         "--tokens {} gives no full window of {} tokens (+1 target); the text "
         "has {}",
         o.tokens, o.window, text.tokens.size());

  bench::VariantRunner ref_run(ref, r.config, bench::variant_spec("ref", 0),
                               o.threads, o.window);
  std::vector<std::unique_ptr<bench::VariantRunner>> runs;
  for (const auto &s : specs)
    runs.push_back(std::make_unique<bench::VariantRunner>(
        s.nvfp4_weights ? *art4[s.nvfp4_head ? 1 : 0] : ref, r.config, s,
        o.threads, o.window));
  std::vector<bench::MetricAccumulator> acc(runs.size());
  ProgressBar bar(r.name, "tok",
                  static_cast<uint64_t>(windows * o.window *
                                        static_cast<int64_t>(runs.size() + 1)));
  std::vector<float> ref_logits;
  std::vector<std::vector<float>> var_logits(runs.size());
  bench::Distribution p, q;
  for (int64_t w = 0; w < windows; ++w) {
    const auto in = std::span<const int32_t>(text.tokens)
                        .subspan(static_cast<size_t>(w * o.window),
                                 static_cast<size_t>(o.window));
    ref_run.run(in, ref_logits);
    bar.advance(static_cast<uint64_t>(o.window));
    for (size_t v = 0; v < runs.size(); ++v) {
      runs[v]->run(in, var_logits[v]);
      bar.advance(static_cast<uint64_t>(o.window));
    }
    for (int64_t i = 0; i < o.window; ++i) {
      const int32_t target =
          text.tokens[static_cast<size_t>(w * o.window + i + 1)];
      const auto row = [&](const std::vector<float> &l) {
        return std::span<const float>(l).subspan(static_cast<size_t>(i * vocab),
                                                 static_cast<size_t>(vocab));
      };
      const std::string where =
          fmt::format("{} ref, window {}, row {}", r.name, w, i);
      bench::to_distribution(row(ref_logits), p, where.c_str());
      for (size_t v = 0; v < runs.size(); ++v) {
        const std::string vw = fmt::format("{} {}, window {}, row {}", r.name,
                                           runs[v]->spec().name, w, i);
        bench::to_distribution(row(var_logits[v]), q, vw.c_str());
        acc[v].add(bench::compare(p, q, target), true);
      }
    }
  }
  bar.finish();
  r.ref_seconds = ref_run.seconds();
  for (size_t v = 0; v < runs.size(); ++v)
    r.variants.push_back(
        {runs[v]->spec(), acc[v].summary(), runs[v]->seconds()});
  return r;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("model name"))
      return line.substr(line.find(':') + 2);
  return "unknown";
}

std::string kv_name(DType d) { return std::string(dtype_name(d)); }

void print_table(const std::vector<ModelResult> &results, const Options &o) {
  fmt::print("| model | variant | weights | KV | prefill chunk | positions | "
             "KL mean | KL p50 | KL p95 | KL p99 | KL max "
             "| top-1 agreement | flips: ref top-1 − top-2 gap p50 / max | ppl "
             "ref → variant | top-1 acc ref → variant |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto &m : results)
    for (const auto &v : m.variants) {
      const auto &s = v.s;
      fmt::print("| {} | {} | {} | {} | {} | {} | {:.2e} | {:.2e} | {:.2e} | "
                 "{:.2e} | {:.2e} | {:.2f}% | {}: {:.2g} / {:.2g} "
                 "| {:.5g} → {:.5g} | {:.2f}% → {:.2f}% |\n",
                 m.name, v.spec.name, weights_name(v.spec, m.weights_dtype),
                 kv_name(v.spec.kv_dtype),
                 v.spec.prefill_chunk > 0 ? v.spec.prefill_chunk : o.window,
                 s.positions, s.kl_mean, s.kl_p50, s.kl_p95, s.kl_p99, s.kl_max,
                 100 * s.top1_agreement, s.flips, s.flip_margin_p50,
                 s.flip_margin_max, s.ppl_base, s.ppl_variant, 100 * s.acc_base,
                 100 * s.acc_variant);
    }
  for (const auto &m : results)
    for (const auto &v : m.variants)
      if (v.spec.kv_dtype == DType::kI8)
        fmt::print("{} {}: top-1 agreement {:.2f}% — target ≥ 99%: {}\n",
                   m.name, v.spec.name, 100 * v.s.top1_agreement,
                   v.s.top1_agreement >= 0.99 ? "met" : "NOT met");
}

nlohmann::json to_json(const std::vector<ModelResult> &results,
                       const Options &o, int64_t text_docs) {
  nlohmann::json j = {{"date", utc_now()},
                      {"cpu", cpu_model()},
                      {"hardware_threads", std::thread::hardware_concurrency()},
                      {"threads", o.threads},
                      {"text", o.text},
                      {"documents", text_docs},
                      {"tokens", o.tokens},
                      {"window", o.window},
                      {"models", nlohmann::json::array()}};
  for (const auto &m : results) {
    nlohmann::json jm = {{"name", m.name},
                         {"path", m.path},
                         {"weights", m.weights_dtype},
                         {"reference", m.ref_note},
                         {"tokens", m.tokens_note},
                         {"vocab", m.config.vocab_size},
                         {"hidden", m.config.hidden_size},
                         {"layers", m.config.num_layers},
                         {"nvfp4_tensors", m.nvfp4_tensors},
                         {"ref_seconds", m.ref_seconds},
                         {"variants", nlohmann::json::array()}};
    for (const auto &v : m.variants) {
      const auto &s = v.s;
      jm["variants"].push_back(
          {{"name", v.spec.name},
           {"weights", weights_name(v.spec, m.weights_dtype)},
           {"nvfp4_activations",
            v.spec.nvfp4_weights
                ? (v.spec.activations == Nvfp4Activations::kNvfp4 ? "w4a4"
                                                                  : "w4a16")
                : ""},
           {"kv", kv_name(v.spec.kv_dtype)},
           {"prefill_chunk",
            v.spec.prefill_chunk > 0 ? v.spec.prefill_chunk : o.window},
           {"positions", s.positions},
           {"kl_mean", s.kl_mean},
           {"kl_p50", s.kl_p50},
           {"kl_p95", s.kl_p95},
           {"kl_p99", s.kl_p99},
           {"kl_max", s.kl_max},
           {"top1_agreement", s.top1_agreement},
           {"flips", s.flips},
           {"flip_ref_margin_p50", s.flip_margin_p50},
           {"flip_ref_margin_max", s.flip_margin_max},
           {"ppl_ref", s.ppl_base},
           {"ppl_variant", s.ppl_variant},
           {"top1_acc_ref", s.acc_base},
           {"top1_acc_variant", s.acc_variant},
           {"seconds", v.seconds}});
    }
    j["models"].push_back(jm);
  }
  return j;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"ninfer-bench-accuracy: KL / top-1 agreement / perplexity of "
               "NVFP4 weights and bf16 / int8 KV against "
               "the reference weights with an f32 KV cache, over a fixed "
               "held-out text (docs/accuracy.md)"};
  Options o;
  app.add_option(
      "--model", o.models,
      "a .ninfer artifact or an HF checkpoint directory (repeatable; default: "
      "models/ninfer-tiny.ninfer unless --fixtures alone)");
  app.add_flag(
      "--fixtures", o.fixtures,
      "also every reference fixture model, tests/data/reference/models/*");
  app.add_option("--text", o.text,
                 "held-out text, JSONL of {\"text\": ...} documents");
  app.add_option("--tokenizer-from", o.tokenizer_from,
                 "artifact whose tokenizer feeds models that have none");
  app.add_option("--dir", o.dir,
                 "scratch directory for packed and NVFP4-derived artifacts");
  app.add_option("--json", o.json, "write the results as JSON to this path");
  app.add_option("--ref", o.ref,
                 "reference weights: bf16 (rounded to bf16 when stored wider) "
                 "or shipped (as stored)")
      ->check(CLI::IsMember({"bf16", "shipped"}));
  app.add_option("--variants", o.variants,
                 "comma-separated: bf16kv, int8kv, int8kv-chunked, w4a4, "
                 "w4a16, w4a4-head, w4a16-head (the nvfp4 lm_head too)");
  app.add_option("--threads", o.threads, "CPU backend threads")
      ->check(CLI::PositiveNumber);
  app.add_option("--tokens", o.tokens,
                 "held-out tokens to use (0 = all of the text)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--window", o.window,
                 "tokens per teacher-forced window (one fresh sequence each)")
      ->check(CLI::PositiveNumber);
  app.add_option("--small-chunk", o.small_chunk,
                 "prefill chunk of the int8kv-chunked variant")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  try {
    std::vector<std::string> wanted;
    std::stringstream ss(o.variants);
    for (std::string v; std::getline(ss, v, ',');)
      if (!v.empty())
        bench::variant_spec(v, o.small_chunk),
            wanted.push_back(v); // validates the name
    if (wanted.empty())
      fail(ErrorKind::kInvalidArgument, "--variants: no variant given");
    std::vector<std::string> models = o.models;
    if (models.empty() && !o.fixtures)
      models.push_back(o.tokenizer_from);
    if (o.fixtures) {
      std::vector<std::string> dirs;
      for (const auto &e :
           fs::directory_iterator(std::string(NINFER_SOURCE_ROOT) +
                                  "/tests/data/reference/models"))
        if (e.is_directory())
          dirs.push_back(e.path().string());
      std::sort(dirs.begin(), dirs.end());
      models.insert(models.end(), dirs.begin(), dirs.end());
    }
    Artifact tok_art = Artifact::open(o.tokenizer_from);
    auto tj = tok_art.blob("tokenizer.json");
    if (!tj)
      fail(ErrorKind::kNotFound,
           "--tokenizer-from {}: the artifact has no tokenizer.json",
           o.tokenizer_from);
    const Tokenizer tok = Tokenizer::from_json(*tj);
    const bench::HeldoutText heldout = bench::load_heldout(o.text, tok);
    const int64_t docs = heldout.documents;

    std::vector<ModelResult> results;
    for (const auto &m : models) {
      spdlog::info(
          "accuracy: {} ({} held-out tokens, windows of {}, variants {})", m,
          o.tokens > 0 ? fmt::format("{}", o.tokens) : "all", o.window,
          o.variants);
      results.push_back(run_model(m, o, tok, wanted));
    }
    fmt::print("held-out text: {} ({} documents, {} characters, {} tokens with "
               "the default tokenizer; {} used); "
               "{} threads; {}; {}\n\n",
               o.text, docs, heldout.characters, heldout.tokens.size(),
               o.tokens > 0 ? fmt::format("{}", o.tokens) : "all", o.threads,
               cpu_model(), utc_now());
    for (const auto &m : results)
      fmt::print("{}: {} layers, hidden {}, vocab {}; reference weights {}, "
                 "f32 KV; tokens: {}; ref forward {:.1f} s\n",
                 m.name, m.config.num_layers, m.config.hidden_size,
                 m.config.vocab_size, m.ref_note, m.tokens_note, m.ref_seconds);
    fmt::print("\n");
    print_table(results, o);
    if (!o.json.empty()) {
      std::ofstream out(o.json);
      if (!out)
        fail(ErrorKind::kIo, "--json {}: cannot write", o.json);
      out << to_json(results, o, docs).dump(1) << "\n";
    }
  } catch (const Error &e) {
    spdlog::error("{}: {}", error_kind_name(e.kind()), e.what());
    return 1;
  }
  std::fflush(stdout);
  return 0;
}
