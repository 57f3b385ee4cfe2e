// Owns the choice of backend a process runs on (cpu, cuda, or auto = CUDA when built and a GPU is present).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "engine/backend/backend.h"

namespace ninfer {

class OpProfile;

enum class BackendKind : uint8_t { kAuto, kCpu, kCuda };

std::string_view backend_kind_name(BackendKind kind);  // "auto", "cpu", "cuda"
std::optional<BackendKind> backend_kind_from_name(std::string_view name);

struct BackendSelection {
  BackendKind kind = BackendKind::kCpu;
  int device = 0;   // CUDA device index
  int threads = 0;  // CPU backend threads (0 = all cores)
  Nvfp4Activations nvfp4_activations = Nvfp4Activations::kNvfp4;
  bool bf16_activations = false;  // CpuBackendOptions::bf16_activations (the CPU backend only)
  // Set: the backend is wrapped in a ProfilingBackend recording every op's time here (benchmarks; docs/backend.md).
  std::shared_ptr<OpProfile> op_profile = nullptr;
};

// kAuto resolves to kCuda when this build has the CUDA backend and the runtime sees `device`, else kCpu; the reason
// is written to `why` (for the startup log). kCuda without a CUDA build throws Error(kUnsupported), without the device
// Error(kNotFound), each saying which is missing.
BackendKind resolve_backend(const BackendSelection& selection, std::string* why = nullptr);
// The backend the selection resolves to (resolve_backend's errors), logged with the reason.
std::unique_ptr<Backend> make_backend(const BackendSelection& selection);

}  // namespace ninfer
