// ninfer-serve: loads a .ninfer artifact and reports the startup facts the server will log.
// The HTTP layer and the engine loop are wired here as they land (issues 4 and 5).
#include <chrono>
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "engine/artifact/artifact.h"
#include "engine/artifact/artifact_summary.h"
#include "engine/core/error.h"
#include "engine/device/device_info.h"
#include "engine/model/model_artifact.h"

int main(int argc, char** argv) {
  CLI::App app{"ninfer-serve: OpenAI-compatible inference server"};
  std::string model;
  bool verify = false;
  app.add_option("--model", model, "path of the .ninfer artifact")->required();
  app.add_flag("--verify", verify, "check every tensor checksum at load");
  CLI11_PARSE(app, argc, argv);

  try {
    spdlog::info("ninfer-serve {}", NINFER_VERSION);
    auto t0 = std::chrono::steady_clock::now();
    ninfer::Artifact artifact = ninfer::Artifact::open(model, {.verify_checksums = verify});
    ninfer::ModelConfig config = ninfer::load_model_config(artifact);
    double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    spdlog::info("artifact {} ({} bytes, {} tensors) opened and validated in {:.3f} s", artifact.path(),
                 artifact.file_bytes(), artifact.tensors().size(), load_s);
    spdlog::info("model {}: {} layers ({} linear attention, {} full attention), hidden {}, vocab {}",
                 ninfer::architecture_name(config.arch), config.num_layers, config.num_linear_attention_layers(),
                 config.num_full_attention_layers(), config.hidden_size, config.vocab_size);
    spdlog::info("devices: {}", ninfer::describe(ninfer::probe_devices()));
    spdlog::error("this build cannot serve requests yet: the CPU engine and the HTTP layer are still to land");
    return 3;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}
