#include "engine/backend/backend_factory.h"

#include <spdlog/spdlog.h>

#include "engine/backend/cuda_backend.h"
#include "engine/backend/profiling_backend.h"
#include "engine/core/error.h"
#include "engine/device/device_info.h"

namespace ninfer {

std::string_view backend_kind_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::kAuto: return "auto";
    case BackendKind::kCpu: return "cpu";
    case BackendKind::kCuda: return "cuda";
  }
  return "auto";
}

std::optional<BackendKind> backend_kind_from_name(std::string_view name) {
  for (BackendKind k : {BackendKind::kAuto, BackendKind::kCpu, BackendKind::kCuda})
    if (backend_kind_name(k) == name) return k;
  return std::nullopt;
}

BackendKind resolve_backend(const BackendSelection& s, std::string* why) {
  if (s.kind == BackendKind::kCpu) {
    if (why) *why = "--backend cpu";
    return s.kind;
  }
  if (s.kind == BackendKind::kCuda) {
    if (!cuda_backend_built())
      fail(ErrorKind::kUnsupported, "--backend cuda: this ninfer build has no CUDA backend (build with the linux-cuda "
           "preset, or -DNINFER_CUDA=ON)");
    const DeviceProbe probe = probe_devices();
    if (s.device < 0 || s.device >= static_cast<int>(probe.devices.size()))
      fail(ErrorKind::kNotFound, "--backend cuda: CUDA device {} is not available ({})", s.device,
           probe.devices.empty() ? probe.unavailable : fmt::format("{} device(s) found", probe.devices.size()));
    if (why) *why = fmt::format("--backend cuda, device {} ({})", s.device, probe.devices[static_cast<size_t>(s.device)].name);
    return s.kind;
  }
  if (!cuda_backend_built()) {
    if (why) *why = "auto: this build has no CUDA backend";
    return BackendKind::kCpu;
  }
  const DeviceProbe probe = probe_devices();
  if (probe.devices.empty()) {
    if (why) *why = "auto: no CUDA device (" + probe.unavailable + ")";
    return BackendKind::kCpu;
  }
  if (s.device < 0 || s.device >= static_cast<int>(probe.devices.size())) {
    if (why) *why = fmt::format("auto: device {} does not exist ({} CUDA device(s))", s.device, probe.devices.size());
    return BackendKind::kCpu;
  }
  if (why) *why = fmt::format("auto: CUDA device {} ({})", s.device, probe.devices[static_cast<size_t>(s.device)].name);
  return BackendKind::kCuda;
}

std::unique_ptr<Backend> make_backend(const BackendSelection& s) {
  std::string why;
  const BackendKind kind = resolve_backend(s, &why);
  std::unique_ptr<Backend> b;
  if (kind == BackendKind::kCuda)
    b = make_cuda_backend({.device = s.device, .nvfp4_activations = s.nvfp4_activations});
  else
    b = make_cpu_backend(
        {.threads = s.threads, .nvfp4_activations = s.nvfp4_activations, .bf16_activations = s.bf16_activations});
  if (s.op_profile) b = std::make_unique<ProfilingBackend>(std::move(b), s.op_profile);
  spdlog::info("backend: {} ({})", b->name(), why);
  return b;
}

}  // namespace ninfer
