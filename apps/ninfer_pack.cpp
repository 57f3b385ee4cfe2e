// ninfer-pack: HF checkpoint (or an existing artifact + extra tensors) → one
// .ninfer artifact; --inspect / --verify one.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "engine/artifact/artifact.h"
#include "engine/artifact/artifact_summary.h"
#include "engine/core/error.h"
#include "engine/core/os_utf8.h"
#include "engine/model/model_artifact.h"
#include "engine/pack/packer.h"

int main(int argc, char **argv) {
  ninfer::use_utf8_console();
  ninfer::Utf8Args args(argc, argv); // UTF-8 paths on Windows too
  CLI::App app{"ninfer-pack: pack a Hugging Face checkpoint (or re-pack an "
               "artifact) into a .ninfer artifact, or inspect one"};
  ninfer::PackOptions o;
  std::string inspect, quant = "none", scale_groups = "fused";
  std::vector<std::string> keep;
  bool verify = false, quiet = false, quant_all = false;
  auto *hf_opt = app.add_option(
      "--hf", o.hf_dir,
      "Hugging Face checkpoint directory (config.json, *.safetensors, "
      "tokenizer files); ModelOpt and compressed-tensors NVFP4 checkpoints are "
      "imported as they are, block-wise FP8 ones dequantized to bf16");
  auto *from_opt = app.add_option("--from", o.from_artifact,
                                  "re-pack an existing artifact: metadata, "
                                  "tokenizer and every tensor are copied");
  auto *add_opt =
      app.add_option("--add-safetensors", o.add_safetensors,
                     "add every tensor of this safetensors file "
                     "(dflash2.* → section dflash2, draft_lm_head.* → "
                     "draft_lm_head); a name clash is an error")
          ->allow_extra_args(false);
  auto *out_opt = app.add_option(
      "-o,--output", o.output,
      "artifact to write (written to a temporary name, then renamed)");
  app.add_option("--quant", quant,
                 "quantize projections: none | nvfp4 (docs/pack.md)")
      ->check(CLI::IsMember({"none", "nvfp4"}));
  app.add_option("--quant-keep", keep,
                 "with --quant nvfp4: a glob of projections to leave as they "
                 "are; replaces the "
                 "default list (*.linear_attn.in_proj_a.weight, "
                 "*.linear_attn.in_proj_b.weight, mtp.*); repeatable")
      ->allow_extra_args(false);
  app.add_flag(
      "--quant-all", quant_all,
      "with --quant nvfp4: empty keep list (every projection quantized)");
  app.add_option(
         "--quant-scale-groups", scale_groups,
         "fused: q/k/v, gate/up and the GDN input projections of a layer "
         "share one weight_scale_2 (ModelOpt export, default); tensor: one per "
         "tensor")
      ->check(CLI::IsMember({"fused", "tensor"}));
  std::string quant_lm_head = "keep";
  app.add_option(
         "--quant-lm-head", quant_lm_head,
         "with --quant nvfp4: keep (the lm_head as it is, default) | nvfp4 "
         "(the lm_head too, 28% of bf16's bytes per decoded token; a tied "
         "model keeps its embedding and gets "
         "an nvfp4 lm_head.weight; docs/pack.md)")
      ->check(CLI::IsMember({"keep", "nvfp4"}));
  app.add_option("--draft-vocab", o.draft.vocab,
                 "write a reduced-vocabulary draft lm_head of N rows (section "
                 "draft_lm_head)");
  app.add_option("--draft-corpus", o.draft.corpus,
                 "corpus for --draft-vocab: files or directories (repeatable)")
      ->allow_extra_args(false);
  int64_t reasoning_budget = 0;
  app.add_option("--reasoning-budget", reasoning_budget,
                 "the artifact's default reasoning budget in tokens, written "
                 "as the generation config's reasoning_budget (ninfer-serve "
                 "uses it when neither the request nor "
                 "--reasoning-budget gives one); -1 removes it")
      ->check(CLI::Range(int64_t{-1}, int64_t{2147483647}));
  auto *inspect_opt = app.add_option("--inspect", inspect,
                                     "print an artifact's config, tensor "
                                     "count, bytes per section and per dtype");
  app.add_flag(
      "--verify", verify,
      "with --inspect (or after packing): check every tensor checksum");
  app.add_flag("-q,--quiet", quiet, "no progress bar");
  hf_opt->excludes(from_opt);
  add_opt->needs(out_opt);
  inspect_opt->excludes(hf_opt)->excludes(from_opt);
  CLI11_PARSE(app, args.argc(), args.argv());
  if (o.hf_dir.empty() && o.from_artifact.empty() && inspect.empty()) {
    std::fprintf(stderr,
                 "ninfer-pack: give --hf DIR -o FILE or --from FILE -o FILE to "
                 "pack, or --inspect FILE\n%s",
                 app.help().c_str());
    return 2;
  }
  if (inspect.empty() && o.output.empty()) {
    std::fprintf(stderr, "ninfer-pack: --hf / --from need -o FILE\n");
    return 2;
  }
  if (quant == "none" &&
      (!keep.empty() || quant_all || app.count("--quant-scale-groups") ||
       quant_lm_head != "keep")) {
    std::fprintf(stderr,
                 "ninfer-pack: --quant-keep / --quant-all / "
                 "--quant-scale-groups / --quant-lm-head need --quant nvfp4\n");
    return 2;
  }
  if (quant_all && !keep.empty()) {
    std::fprintf(
        stderr,
        "ninfer-pack: --quant-all and --quant-keep exclude each other\n");
    return 2;
  }
  o.quant.nvfp4 = quant == "nvfp4";
  o.quant.lm_head = quant_lm_head == "nvfp4";
  if (quant_all)
    o.quant.keep.clear();
  else if (!keep.empty())
    o.quant.keep = keep;
  o.quant.scale_groups = scale_groups == "tensor"
                             ? ninfer::Nvfp4ScaleGroups::kTensor
                             : ninfer::Nvfp4ScaleGroups::kFused;
  o.show_progress = !quiet;
  if (app.count("--reasoning-budget"))
    o.reasoning_budget = reasoning_budget;

  try {
    if (!inspect.empty()) {
      ninfer::Artifact a = ninfer::Artifact::open(
          inspect, {.verify_checksums = verify, .show_progress = !quiet});
      ninfer::load_model_config(a);
      std::fputs(ninfer::format_summary(a, ninfer::summarize(a)).c_str(),
                 stdout);
      if (verify)
        std::puts("checksums     ok");
      return 0;
    }
    ninfer::PackReport r = ninfer::pack_artifact(o);
    if (r.imported == "fp8")
      spdlog::info(
          "imported block-wise FP8 checkpoint: {} weights dequantized to bf16",
          r.fp8_dequantized);
    else if (!r.imported.empty())
      spdlog::info("imported {} NVFP4 checkpoint", r.imported);
    if (o.quant.nvfp4)
      spdlog::info("nvfp4: {} projections{} quantized ({} -> {} bytes), {} "
                   "kept as they were",
                   r.quant.quantized, r.quant.lm_head ? " and the lm_head" : "",
                   r.quant.bytes_before, r.quant.bytes_after,
                   r.quant.kept.size());
    spdlog::info("wrote {}: {} tensors, {} bytes of tensor data, {} bytes on "
                 "disk, {:.2f} s ({:.0f} MB/s)",
                 o.output, r.tensors, r.tensor_bytes, r.file_bytes, r.seconds,
                 r.tensor_bytes / 1e6 / std::max(r.seconds, 1e-9));
    if (verify) {
      ninfer::Artifact a = ninfer::Artifact::open(
          o.output, {.verify_checksums = true, .show_progress = !quiet});
      ninfer::load_model_config(a);
      spdlog::info("verified {}", o.output);
    }
    return 0;
  } catch (const ninfer::Error &e) {
    std::fprintf(stderr, "ninfer-pack: error: %s\n", e.what());
    return 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ninfer-pack: error: %s\n", e.what());
    return 1;
  }
}
