// ninfer-pack: Hugging Face checkpoint directory → one .ninfer artifact; --inspect / --verify an artifact.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "engine/artifact/artifact.h"
#include "engine/artifact/artifact_summary.h"
#include "engine/core/error.h"
#include "engine/model/model_artifact.h"
#include "engine/pack/packer.h"

int main(int argc, char** argv) {
  CLI::App app{"ninfer-pack: pack a Hugging Face checkpoint into a .ninfer artifact, or inspect one"};
  std::string hf_dir, output, inspect;
  bool verify = false, quiet = false;
  auto* hf_opt = app.add_option("--hf", hf_dir, "Hugging Face checkpoint directory (config.json, *.safetensors, tokenizer files)");
  auto* out_opt = app.add_option("-o,--output", output, "artifact to write (written to a temporary name, then renamed)");
  auto* inspect_opt = app.add_option("--inspect", inspect, "print an artifact's config, tensor count, bytes per section and per dtype");
  app.add_flag("--verify", verify, "with --inspect (or after packing): check every tensor checksum");
  app.add_flag("-q,--quiet", quiet, "no progress bar");
  hf_opt->needs(out_opt);
  out_opt->needs(hf_opt);
  inspect_opt->excludes(hf_opt);
  CLI11_PARSE(app, argc, argv);
  if (hf_dir.empty() && inspect.empty()) {
    std::fprintf(stderr, "ninfer-pack: give --hf DIR -o FILE to pack, or --inspect FILE\n%s", app.help().c_str());
    return 2;
  }

  try {
    if (!inspect.empty()) {
      ninfer::Artifact a = ninfer::Artifact::open(inspect, {.verify_checksums = verify, .show_progress = !quiet});
      ninfer::load_model_config(a);
      std::fputs(ninfer::format_summary(a, ninfer::summarize(a)).c_str(), stdout);
      if (verify) std::puts("checksums     ok");
      return 0;
    }
    ninfer::PackReport r = ninfer::pack_hf_checkpoint({.hf_dir = hf_dir, .output = output, .show_progress = !quiet});
    spdlog::info("wrote {}: {} tensors, {} bytes of tensor data, {} bytes on disk, {:.2f} s ({:.0f} MB/s)", output,
                 r.tensors, r.tensor_bytes, r.file_bytes, r.seconds, r.tensor_bytes / 1e6 / std::max(r.seconds, 1e-9));
    if (verify) {
      ninfer::Artifact a = ninfer::Artifact::open(output, {.verify_checksums = true, .show_progress = !quiet});
      ninfer::load_model_config(a);
      spdlog::info("verified {}", output);
    }
    return 0;
  } catch (const ninfer::Error& e) {
    std::fprintf(stderr, "ninfer-pack: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ninfer-pack: error: %s\n", e.what());
    return 1;
  }
}
