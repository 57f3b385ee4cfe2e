// ninfer-serve: loads a .ninfer artifact into the CPU engine and serves the OpenAI-compatible HTTP API.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <algorithm>
#include <atomic>
#include <optional>

#include <spdlog/spdlog.h>

#include "engine/artifact/artifact.h"
#include "engine/artifact/mapped_file.h"
#include "engine/core/error.h"
#include "engine/core/os_utf8.h"
#include "engine/device/device_info.h"
#include "engine/model/model_artifact.h"
#include "engine/model/weight_shard.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/memory_plan.h"
#include "engine/speculative/drafter_registry.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/reasoning_budget.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/deferred_engine.h"
#include "server/engine_service.h"
#include "server/http_server.h"
#include "server/serve_engine_options.h"
#include "server/serve_follower.h"
#include "server/serve_memory_plan.h"
#include "server/serve_options.h"
#include "server/token_engine_service.h"
#include "server/tool_call_parser.h"

namespace {

// The embedded default model: shipped in the source tree under models/.
const std::string kDefaultModel = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny-nvfp4.ninfer";

std::string model_name_of(const std::string& path) {
  return ninfer::path_to_utf8(ninfer::path_from_utf8(path).stem());
}

}  // namespace

int main(int argc, char** argv) {
  ninfer::use_utf8_console();
  ninfer::Utf8Args args(argc, argv);  // on Windows: --model F:\models\模型.ninfer as UTF-8, not the ANSI code page
  auto parsed = ninfer::server::parse_serve_options(args.argc(), args.argv(), kDefaultModel);
  if (!parsed.options) {
    std::fputs(parsed.message.c_str(), parsed.exit_code == 0 ? stdout : stderr);
    if (!parsed.message.empty() && parsed.message.back() != '\n') std::fputc('\n', parsed.exit_code == 0 ? stdout : stderr);
    return parsed.exit_code;
  }
  const ninfer::server::ServeOptions& opt = *parsed.options;
  if (opt.plan_only) return ninfer::server::run_plan_only(opt);  // a dry run: no weights, no GPU needed
  try {
    spdlog::info("ninfer-serve {} {}", NINFER_VERSION, ninfer::server::describe(opt));
    auto t0 = std::chrono::steady_clock::now();
    // Mapped first: the header, the config and the plan need no copy of the weights.
    ninfer::Artifact artifact = ninfer::Artifact::open(opt.model);
    // --no-mmap (the CPU default): the weights are copied into huge-page memory before anything binds them.
    // Under CPU TP the tensors every rank copies into its shard stay mapped: they are read once, at load.
    auto load_weights = [&](bool cpu_backend, const ninfer::server::PlanModel& plan_model) {
      if (ninfer::server::weights_resident(opt, cpu_backend)) {
        const std::vector<std::string_view> sections = ninfer::server::served_sections(opt);
        const std::vector<std::string> shard_copies =
            cpu_backend ? ninfer::server::shard_copied_tensors(opt, plan_model) : std::vector<std::string>{};
        artifact.make_resident(sections, shard_copies);
        spdlog::info("weights read into memory: {:.1f} MiB of section(s) {} (--mmap decodes from the mapping)",
                     artifact.resident_bytes() / (1024.0 * 1024.0), fmt::join(sections, ", "));
      }
      if (opt.verify) artifact.verify();
    };
    ninfer::ModelConfig config = ninfer::load_model_config(artifact);
    for (int r = 0; r < opt.tp; ++r) ninfer::tp_layout(config, r, opt.tp);  // heads that cannot be cut: refused now
    // Where the model runs, decided before anything is loaded: the plan counts that device's free memory.
    // With --nnodes every process decides for itself (a follower refuses a rank 0 on another backend).
    ninfer::BackendSelection backend_sel{.kind = *ninfer::backend_kind_from_name(opt.backend),
                                         .device = opt.devices.empty() ? 0 : opt.devices.front(),
                                         .threads = opt.threads};
    std::string backend_why;
    const ninfer::BackendKind backend_kind = ninfer::resolve_backend(backend_sel, &backend_why);
    const bool on_gpu = backend_kind == ninfer::BackendKind::kCuda;
    auto device_free_bytes = [&]() -> uint64_t {
      if (!on_gpu) {
        const uint64_t host = ninfer::host_available_bytes();
        return opt.device_memory && host > 0 ? std::min(host, *opt.device_memory) : opt.device_memory.value_or(host);
      }
      const ninfer::DeviceProbe probe = ninfer::probe_devices();
      const uint64_t free_b = probe.devices.at(static_cast<size_t>(backend_sel.device)).free_bytes;
      return opt.device_memory ? std::min(free_b, *opt.device_memory) : free_b;
    };
    if (on_gpu) {
      const ninfer::DeviceProbe probe = ninfer::probe_devices();
      const ninfer::DeviceInfo& d = probe.devices.at(static_cast<size_t>(backend_sel.device));
      spdlog::info("device {}: {} (compute capability {}.{}, {} SMs), {:.1f} of {:.1f} MiB free; {}", d.index, d.name,
                   d.cc_major, d.cc_minor, d.multiprocessors, d.free_bytes / (1024.0 * 1024.0),
                   d.total_bytes / (1024.0 * 1024.0), probe.runtime);
    }
    spdlog::info("backend: {} ({})", ninfer::backend_kind_name(backend_kind), backend_why);

    // On a GPU the per-device plan (docs/memory-plan.md) counts weights, KV, state, activations, op workspaces, the
    // fixed allowance and the safety margin, and refuses a plan that does not fit each device (with --nnodes, every
    // node plans with its own device's free memory).
    auto plan_devices = [&](const ninfer::server::PlanModel& plan_model) {
      ninfer::DevicePlan p = ninfer::plan_devices_or_fail(
          ninfer::server::device_plan_input(opt, plan_model, ninfer::server::device_free_memory(opt)));
      const std::string table = p.table();
      for (size_t at = 0, end; at < table.size(); at = end + 1) {
        end = table.find('\n', at);
        if (end == std::string::npos) end = table.size();
        spdlog::info("{}", table.substr(at, end - at));
      }
      return p;
    };

    // --nnodes: a follower process joins the group and follows rank 0; it serves no HTTP.
    if (opt.nnodes > 1 && opt.node_rank > 0) {
      const ninfer::server::PlanModel plan_model = ninfer::server::plan_model_from_artifact(artifact, opt);
      if (on_gpu) plan_devices(plan_model);
      load_weights(!on_gpu, plan_model);
      return ninfer::server::run_follower(opt, artifact, config, backend_sel.device, backend_kind);
    }

    const std::string spec_method(ninfer::server::spec_method_name(opt.spec));
    // Speculative decoding: the drafter is checked against the artifact first (a missing section stops the start);
    // it binds its weights once they are where they will stay (load_weights).
    std::string drafter_line;
    if (opt.spec != ninfer::server::SpecMethod::kNone)
      drafter_line = ninfer::describe_drafter(spec_method, artifact, config, opt.lm_head_draft);
    // Without tokenizer.json (ninfer-pack warns about it) the model is served for token ids only (docs/api.md).
    std::optional<ninfer::Tokenizer> tokenizer;
    if (auto tokenizer_json = artifact.blob("tokenizer.json")) tokenizer = ninfer::Tokenizer::from_json(*tokenizer_json);
    else
      spdlog::warn("{}: the artifact has no tokenizer.json: serving token ids only (/v1/completions with 'prompt' as "
                   "an array of token ids, the output as token_ids); chat, text prompts, stop strings, logprobs, "
                   "/tokenize and /detokenize answer 400", artifact.path());
    const auto& meta = artifact.metadata();
    ninfer::ChatTemplate chat = meta.contains("chat_template") && meta["chat_template"].is_string()
                                    ? ninfer::ChatTemplate::from_template_text(meta["chat_template"].get<std::string>())
                                    : ninfer::ChatTemplate();

    ninfer::EngineOptions eo = ninfer::server::engine_options_from(opt, config);
    eo.backend = backend_kind;
    eo.device = backend_sel.device;
    eo.devices = opt.devices;  // CUDA TP: one per rank (empty: 0..tp-1)
    eo.threads = opt.threads;
    eo.nvfp4_activations = opt.nvfp4_w4a16 ? ninfer::Nvfp4Activations::kFloat : ninfer::Nvfp4Activations::kNvfp4;
    eo.bf16_activations = opt.bf16_activations;
    if (opt.bf16_activations && backend_kind == ninfer::BackendKind::kCuda)
      spdlog::warn("--dense-activations bf16 applies to the CPU backend only; the CUDA backend's linears are unchanged");
    eo.step_graphs = opt.cuda_graphs;
    eo.greedy = opt.greedy;
    if (tokenizer)  // padded rows never produced
      eo.output_ids = ninfer::server::tokenizer_output_ids(*tokenizer, config.vocab_size);
    const ninfer::server::PlanModel plan_model = ninfer::server::plan_model_from_artifact(artifact, opt);
    const ninfer::MemoryPlanInput plan_in =
        ninfer::server::host_plan_input(opt, plan_model, device_free_bytes(), !on_gpu);
    ninfer::MemoryPlan plan = ninfer::plan_memory(config, plan_in);
    std::optional<ninfer::DevicePlan> device_plan;
    if (on_gpu) device_plan = plan_devices(plan_model);
    // The server listens (GET /health: 503) while the weights are read into memory (or paged in) and the engine is
    // built; from here on only the loader thread touches the artifact and the engine options.
    ninfer::server::DeferredEngine port;
    std::unique_ptr<ninfer::GlooGroup> group;  // --nnodes: this process is rank 0; outlives the engine
    std::atomic<bool> group_lost{false};
    if (opt.nnodes > 1) {
      eo.join_timeout = std::chrono::seconds(opt.join_timeout_s);
      eo.on_group_lost = [&](const std::string& why) {
        spdlog::critical("tensor parallel: the process group is broken ({}); ninfer-serve stops", why);
        group_lost = true;
        ninfer::server::request_run_server_stop();
      };
    }
    std::unique_ptr<ninfer::Engine> engine;
    std::unique_ptr<ninfer::server::EnginePort> service;
    std::atomic<bool> load_failed{false}, serving_done{false};
    std::thread loader([&] {
      try {
        load_weights(!on_gpu, plan_model);
        if (opt.spec != ninfer::server::SpecMethod::kNone) {
          eo.drafter = ninfer::make_drafter_factory(spec_method, artifact, config, opt.lm_head_draft);
          eo.draft_tokens = opt.draft_tokens.value_or(ninfer::default_draft_tokens(spec_method));
        }
        if (opt.nnodes > 1) {
          group = std::make_unique<ninfer::GlooGroup>(ninfer::server::gloo_group_options(opt));
          eo.process_group = group.get();
        }
        engine = std::make_unique<ninfer::Engine>(artifact, config, eo);
        double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        spdlog::info("artifact {} ({} bytes) loaded in {:.2f} s: {} {} layers ({} linear attention, {} full "
                     "attention), hidden {}, vocab {}", artifact.path(), artifact.file_bytes(), load_s,
                     ninfer::architecture_name(config.arch), config.num_layers, config.num_linear_attention_layers(),
                     config.num_full_attention_layers(), config.hidden_size, config.vocab_size);
        spdlog::info("backend {}; devices: {}", engine->backend_name(), ninfer::describe(ninfer::probe_devices()));
        if (eo.drafter)
          spdlog::info("speculative decoding: --spec {} --draft-tokens {}{}: {}", spec_method, eo.draft_tokens,
                       opt.lm_head_draft ? " --lm-head-draft" : "", drafter_line);
        else
          spdlog::info("speculative decoding: off (--spec none)");
        if (engine->prefix_reuse())
          spdlog::info("prefix reuse: on, whole {}-token blocks{}", eo.kv_block_size,
                       engine->prefix_snapshot_rows() > 0
                           ? fmt::format(", up to {} GDN state snapshots", engine->prefix_snapshot_rows())
                           : std::string());
        else if (!opt.prefix_reuse)  // (off because of --spec: the engine warned when it was built)
          spdlog::info("prefix reuse: off (--no-prefix-reuse), every prompt is prefilled cold");
        spdlog::info("memory plan: {}; {} free after load {:.1f} MiB", plan.describe(), on_gpu ? "device" : "host",
                     device_free_bytes() / (1024.0 * 1024.0));
        if (device_plan)
          for (const ninfer::RankPlan& r : device_plan->ranks)
            if (opt.nnodes == 1 || r.rank == 0)  // with --nnodes the other ranks are other nodes' GPUs
              spdlog::info("device {}: free after load {:.1f} MiB, planned slack {:.1f} MiB", r.device,
                           device_free_bytes() / (1024.0 * 1024.0), r.slack() / (1024.0 * 1024.0));
        ninfer::server::EngineServiceConfig sc;
        sc.info.name = opt.served_model_name.empty() ? model_name_of(opt.model) : opt.served_model_name;
        sc.info.max_context = eo.max_context;
        sc.info.created = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::file_clock::to_sys(std::filesystem::last_write_time(ninfer::path_from_utf8(opt.model)))
                                  .time_since_epoch())
                              .count();
        const nlohmann::json& gen = meta.contains("generation") ? meta["generation"] : nlohmann::json::object();
        sc.info.default_sampling = ninfer::server::default_sampling(gen);
        sc.info.tool_call_format = ninfer::server::resolve_tool_call_format(
            opt.tool_call_parser, meta.contains("chat_template") && meta["chat_template"].is_string()
                                      ? meta["chat_template"].get_ref<const std::string&>() : std::string());
        spdlog::info("tool calls: {} (--tool-call-parser {})",
                     ninfer::server::tool_call_format_name(sc.info.tool_call_format), opt.tool_call_parser);
        sc.info.settings = {std::string(ninfer::server::kv_dtype_name(opt.kv_dtype)), eo.prefill_chunk, eo.max_context,
                            engine->kv_tokens(), engine->prefix_reuse(), opt.tp, opt.max_concurrency, spec_method,
                            eo.drafter ? eo.draft_tokens : 0, opt.lm_head_draft};
        sc.stop_ids = tokenizer ? ninfer::server::default_stop_ids(gen, *tokenizer) : ninfer::server::generation_stop_ids(gen);
        sc.default_reasoning_budget = opt.reasoning_budget;
        const std::optional<int64_t> artifact_budget =
            ninfer::generation_reasoning_budget(gen, opt.model + " (metadata generation)");
        if (!opt.reasoning_budget_unlimited) sc.artifact_reasoning_budget = artifact_budget;
        if (opt.reasoning_budget)
          spdlog::info("reasoning budget: {} tokens (--reasoning-budget; caps reasoning_effort)", *opt.reasoning_budget);
        else if (sc.artifact_reasoning_budget)
          spdlog::info("reasoning budget: {} tokens by default (the artifact's generation config; a request's "
                       "reasoning_effort or --reasoning-budget overrides it)", *sc.artifact_reasoning_budget);
        else
          spdlog::info("reasoning budget: none{}", artifact_budget ? fmt::format(" (--reasoning-budget -1; the "
                                                                                  "artifact's {} is not used)", *artifact_budget)
                                                                   : std::string());
        if (tokenizer) service = std::make_unique<ninfer::server::EngineService>(*engine, *tokenizer, chat, sc);
        else service = std::make_unique<ninfer::server::TokenEngineService>(*engine, sc);
        port.attach(service.get());
      } catch (const std::exception& e) {
        spdlog::error("loading failed: {}", e.what());
        load_failed = true;
        // run_server may not be waiting yet: keep asking until it has returned.
        while (!serving_done) {
          ninfer::server::request_run_server_stop();
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      }
    });
    int rc = ninfer::server::run_server(opt, port);
    serving_done = true;
    loader.join();
    return load_failed || group_lost ? 1 : rc;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}
