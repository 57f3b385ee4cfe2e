#include "server/serve_memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/artifact/mapped_file.h"
#include "engine/backend/backend_factory.h"
#include "engine/core/error.h"
#include "engine/device/device_info.h"
#include "engine/model/model_artifact.h"
#include "engine/runtime/engine.h"
#include "engine/plan/host_plan.h"
#include "engine/runtime/memory_plan.h"
#include "engine/speculative/drafter_registry.h"
#include "server/serve_engine_options.h"

namespace ninfer::server {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

nlohmann::json read_json(const std::string &path, const char *flag) {
  std::ifstream in(path_from_utf8(path), std::ios::binary);
  if (!in)
    fail(ErrorKind::kNotFound, "{} {}: cannot open the file", flag, path);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception &e) {
    fail(ErrorKind::kInvalidArgument, "{} {}: not valid JSON: {}", flag, path,
         e.what());
  }
}

PlanSpec plan_spec(SpecMethod m) {
  return m == SpecMethod::kMtp       ? PlanSpec::kMtp
         : m == SpecMethod::kDflash2 ? PlanSpec::kDflash2
                                     : PlanSpec::kNone;
}

int32_t draft_tokens(const ServeOptions &o) {
  if (o.spec == SpecMethod::kNone)
    return 0;
  return o.draft_tokens.value_or(
      default_draft_tokens(spec_method_name(o.spec)));
}

// --backend cpu (or auto without a GPU): the one-host plan of plan_memory(), as
// the serving path counts it.
int run_host_plan(const ServeOptions &o, const PlanModel &m) {
  const uint64_t host = host_available_bytes();
  const uint64_t available =
      o.device_memory
          ? (host > 0 ? std::min(host, *o.device_memory) : *o.device_memory)
          : host;
  const MemoryPlan p = plan_memory(m.config, host_plan_input(o, m, available, true)); // throws the shortfall
  std::printf("memory plan (host, --backend cpu, %d CPU rank%s sharing it): %s\n",
              o.tp, o.tp == 1 ? "" : "s", p.describe().c_str());
  return 0;
}

} // namespace

PlanModel plan_model_from_artifact(const Artifact &artifact,
                                   const ServeOptions &o) {
  PlanModel m;
  m.config = load_model_config(artifact);
  m.tensors = plan_tensors_from_artifact(artifact);
  m.source = artifact.path();
  if (o.spec == SpecMethod::kMtp) {
    bool has_mtp = false;
    for (const PlanTensor &t : m.tensors)
      has_mtp = has_mtp || t.section == "mtp";
    if (!has_mtp)
      fail(ErrorKind::kNotFound,
           "{}: --spec mtp needs the artifact's mtp section, which it has not",
           m.source);
  }
  if (o.spec == SpecMethod::kDflash2)
    m.dflash2 = load_dflash2_config(artifact, m.config);
  return m;
}

PlanModel plan_model_from_config(const ServeOptions &o) {
  PlanModel m;
  m.config = ModelConfig::from_hf_json(
      read_json(o.plan_config, "--plan-config"), o.plan_config);
  m.tensors = plan_tensors_from_config(
      m.config, o.plan_quant == "bf16"         ? PlanQuant::kBf16
                : o.plan_quant == "nvfp4-head" ? PlanQuant::kNvfp4Head
                                               : PlanQuant::kNvfp4);
  m.source = fmt::format("{} (--plan-quant {})", o.plan_config, o.plan_quant);
  if (o.spec == SpecMethod::kMtp && m.config.mtp_num_layers == 0)
    fail(ErrorKind::kInvalidArgument,
         "--plan-config {}: --spec mtp needs mtp_num_hidden_layers in the "
         "config",
         o.plan_config);
  if (o.spec == SpecMethod::kDflash2) {
    if (o.plan_dflash2_config.empty())
      fail(ErrorKind::kInvalidArgument,
           "--plan-config with --spec dflash2: give the drafter's shape with "
           "--plan-dflash2-config config.json");
    m.dflash2 = dflash2_config_from_hf_json(
        read_json(o.plan_dflash2_config, "--plan-dflash2-config"), m.config,
        o.plan_dflash2_config);
    for (PlanTensor &t : plan_tensors_from_dflash2(*m.dflash2))
      m.tensors.push_back(std::move(t));
  }
  return m;
}

std::vector<int> rank_devices(const ServeOptions &o) {
  std::vector<int> out;
  for (int r = 0; r < o.tp; ++r) {
    if (o.nnodes > 1) // every node plans its ranks as if on its own GPU
      out.push_back(o.devices.empty() ? 0 : o.devices.front());
    else
      out.push_back(o.devices.empty() ? r : o.devices[static_cast<size_t>(r)]);
  }
  return out;
}

std::vector<uint64_t> device_free_memory(const ServeOptions &o) {
  std::vector<uint64_t> out;
  DeviceProbe probe;
  bool probed = false;
  for (const int device : rank_devices(o)) {
    if (!probed)
      probe = probe_devices(), probed = true;
    const DeviceInfo *info = nullptr;
    for (const DeviceInfo &d : probe.devices)
      if (d.index == device)
        info = &d;
    if (info && o.device_memory)
      out.push_back(std::min(info->free_bytes, *o.device_memory));
    else if (info)
      out.push_back(info->free_bytes);
    else if (o.device_memory)
      out.push_back(*o.device_memory);
    else
      fail(ErrorKind::kNotFound,
           "memory plan: GPU {} is not available ({}); give --device-memory "
           "SIZE to plan for it",
           device, probe.unavailable.empty() ? "not found" : probe.unavailable);
  }
  return out;
}

DevicePlanInput device_plan_input(const ServeOptions &o, const PlanModel &m,
                                  std::vector<uint64_t> available) {
  const EngineOptions eo = engine_options_from(o, m.config);
  DevicePlanInput in;
  in.config = m.config;
  in.tensors = m.tensors;
  in.dflash2 = m.dflash2;
  in.tp = o.tp;
  in.devices = rank_devices(o);
  in.available_bytes = std::move(available);
  in.max_context = eo.max_context;
  in.max_concurrency = eo.max_concurrency;
  in.kv_capacity = eo.kv_capacity;
  in.kv_block_size = eo.kv_block_size;
  in.kv_dtype = eo.kv_dtype;
  in.prefill_chunk = eo.prefill_chunk;
  in.spec = plan_spec(o.spec);
  in.draft_tokens = draft_tokens(o);
  in.lm_head_draft = o.lm_head_draft;
  in.prefix_state_rows =
      o.spec == SpecMethod::kNone ? prefix_state_rows(m.config, eo) : 0;
  in.embedding_on_device = o.tp == 1;
  in.w4a4 = !o.nvfp4_w4a16;
  return in;
}

std::vector<std::string> shard_copied_tensors(const ServeOptions &o,
                                              const PlanModel &m) {
  DevicePlanInput dp = device_plan_input(
      o, m, std::vector<uint64_t>(static_cast<size_t>(o.tp), 0));
  dp.embedding_on_device = true; // the host holds it, as in host_plan_input
  return tensors_every_rank_copies(dp);
}

MemoryPlanInput host_plan_input(const ServeOptions &o, const PlanModel &m,
                                uint64_t available, bool cpu_ranks) {
  const EngineOptions eo = engine_options_from(o, m.config);
  MemoryPlanInput in{.max_context = eo.max_context,
                     .max_concurrency = eo.max_concurrency,
                     .kv_capacity = eo.kv_capacity,
                     .kv_block_size = eo.kv_block_size,
                     .kv_dtype = eo.kv_dtype,
                     .available_bytes = available,
                     .draft_tokens = draft_tokens(o),
                     .prefix_state_rows = o.spec == SpecMethod::kNone
                                              ? prefix_state_rows(m.config, eo)
                                              : 0};
  // The ranks this plan counts: the CPU ranks, or on a GPU the model as one
  // (the per-device plan counts the devices).
  const int ranks = cpu_ranks ? o.tp : 1;
  DevicePlanInput dp = device_plan_input(
      o, m, std::vector<uint64_t>(static_cast<size_t>(ranks), available));
  dp.tp = ranks;
  dp.embedding_on_device = true; // the host holds it
  // The weights of the sections the server runs, copied into memory or
  // mapped, but for the tensors every CPU rank copies into its shard: those
  // are read once at load and stay mapped (clean page cache).
  in.weights_resident = weights_resident(o, cpu_ranks);
  const std::vector<std::string_view> sections = served_sections(o);
  const std::vector<std::string> copied =
      cpu_ranks ? tensors_every_rank_copies(dp) : std::vector<std::string>{};
  for (const PlanTensor &t : m.tensors)
    if (std::find(sections.begin(), sections.end(), t.section) !=
            sections.end() &&
        std::find(copied.begin(), copied.end(), t.name) == copied.end())
      in.weight_bytes += tensor_storage_bytes(t.dtype, t.shape).value_or(0);
  if (cpu_ranks) {
    in.tp = o.tp;
    const HostRanksPlan host = plan_host_ranks(dp, o.threads, o.bf16_activations);
    in.shard_copy_bytes = host.shard_copies();
    in.activation_bytes = host.activations();
  }
  if (dp.spec != PlanSpec::kNone) {
    // The drafters' own caches, each rank's for its heads (as the per-device
    // plan counts them); at TP1 drafter_cache_bytes() of the artifact. The
    // ranks are cut once; the largest-context search calls this per probe.
    std::vector<PlanRank> views;
    for (int r = 0; r < ranks; ++r)
      views.push_back(plan_rank_view(dp, r));
    in.drafter_bytes = [dp = std::move(dp), views](int64_t max_context) {
      uint64_t bytes = 0;
      for (const PlanRank &v : views)
        bytes += planned_drafter_cache_bytes(dp, v, max_context);
      return bytes;
    };
  }
  return in;
}

int run_plan_only(const ServeOptions &o) {
  try {
    std::optional<Artifact> artifact;
    PlanModel m;
    if (!o.plan_config.empty()) {
      m = plan_model_from_config(o);
    } else {
      artifact.emplace(Artifact::open(o.model, {.verify_checksums = false}));
      m = plan_model_from_artifact(*artifact, o);
    }
    for (int r = 0; r < o.tp; ++r)
      tp_layout(m.config, r,
                o.tp); // heads that cannot be cut: refused as at start
    bool cuda = o.backend == "cuda";
    if (o.backend == "auto") {
      BackendSelection sel{.kind = BackendKind::kAuto,
                           .device = o.devices.empty() ? 0 : o.devices.front()};
      cuda = resolve_backend(sel) == BackendKind::kCuda;
    }
    std::printf(
        "plan for %s: %s, --tp %d, --max-context %lld, --max-concurrency %d, "
        "--kv-dtype %s, --prefill-chunk "
        "%lld, --spec %s%s\n",
        m.source.c_str(), cuda ? "CUDA devices" : "the host (CPU backend)",
        o.tp,
        static_cast<long long>(
            o.max_context.value_or(m.config.max_position_embeddings)),
        o.max_concurrency, std::string(kv_dtype_name(o.kv_dtype)).c_str(),
        static_cast<long long>(o.prefill_chunk),
        std::string(spec_method_name(o.spec)).c_str(),
        o.spec == SpecMethod::kNone
            ? ""
            : fmt::format(" --draft-tokens {}", draft_tokens(o)).c_str());
    if (!cuda)
      return run_host_plan(o, m);
    const DevicePlan plan =
        plan_devices_or_fail(device_plan_input(o, m, device_free_memory(o)));
    std::fputs(plan.table().c_str(), stdout);
    for (const RankPlan &r : plan.ranks)
      std::printf("%s %d: planned slack %.1f MiB of %.1f MiB free\n",
                  o.nnodes > 1 ? "rank" : "device",
                  o.nnodes > 1 ? r.rank : r.device, r.slack() / kMiB,
                  r.available / kMiB);
    if (o.nnodes > 1)
      std::printf("(--nnodes %d: one rank per process, each counted on this "
                  "process's GPU %d; every node plans its own at start)\n",
                  o.nnodes, plan.ranks.front().device);
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}

} // namespace ninfer::server
