// Owns ninfer-serve's memory-plan wiring: the per-device plan input its flags and the artifact (or a --plan-config)
// imply, the free memory of each rank's device, and --plan-only (print the table, exit 0 or 1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/artifact/artifact.h"
#include "engine/plan/device_plan.h"
#include "engine/runtime/memory_plan.h"
#include "server/serve_options.h"

namespace ninfer::server {

// The model the plan is about: the artifact's header and tensor table (no weights read), or --plan-config with
// --plan-quant (and --plan-dflash2-config for --spec dflash2).
struct PlanModel {
  ModelConfig config;
  std::vector<PlanTensor> tensors;
  std::optional<Dflash2Config> dflash2;
  std::string source;  // for the log: the artifact path or the config path
};
PlanModel plan_model_from_artifact(const Artifact& artifact, const ServeOptions& options);
PlanModel plan_model_from_config(const ServeOptions& options);

// Each rank's GPU: --devices, 0..tp-1 without it; with --nnodes this process's GPU (--devices' one entry, or 0) for
// every rank, each node planning as if the others were like it.
std::vector<int> rank_devices(const ServeOptions& options);

// Each rank's device free memory for the CUDA plan: --device-memory, the probe's reading of each --devices ordinal,
// or the smaller of both. Error(kNotFound) when neither says (no such GPU and no --device-memory).
std::vector<uint64_t> device_free_memory(const ServeOptions& options);

// The per-device plan input of these flags. The embedding stays on the host under --tp > 1 and is on the device at
// --tp 1 (what the CUDA backend uploads today; docs/memory-plan.md).
DevicePlanInput device_plan_input(const ServeOptions& options, const PlanModel& model, std::vector<uint64_t> available);

// The host plan's input (plan_memory, engine/runtime/memory_plan.h) of these flags: the weights of the
// served_sections() (copied into memory, or mapped), KV, linear state and the drafter's caches,
// and with `cpu_ranks` (the CPU backend) each rank's heads, the weight copies its shards make, its activation scratch
// and CPU backend buffers (plan_host_ranks).
MemoryPlanInput host_plan_input(const ServeOptions& options, const PlanModel& model, uint64_t available,
                                bool cpu_ranks);

// The tensors every CPU rank copies into its own shard at --tp (none at --tp 1; tensors_every_rank_copies): a resident
// load leaves them mapped (Artifact::make_resident's keep_mapped).
std::vector<std::string> shard_copied_tensors(const ServeOptions& options, const PlanModel& model);

// --plan-only: prints the plan on stdout and returns 0 when it fits; prints the shortfall (and the table) on stderr and
// returns 1 when it does not, or when the model or a device cannot be read.
int run_plan_only(const ServeOptions& options);

}  // namespace ninfer::server
