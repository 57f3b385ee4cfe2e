// Owns the public entry to the CUDA backend: its options and factory (a build without CUDA says so when asked).
#pragma once

#include <cstdint>
#include <memory>

#include "engine/backend/backend.h"

namespace ninfer {

// The W4A4 decode kernels (M ≤ 8 rows) of NVFP4 linears: kDefault is the set the last GPU measurement chose
// (kern::kW4a4GemvDefault); kTiled and kStream pick one, for side-by-side runs (docs/gpu.md, the streaming GEMV).
enum class W4a4Decode : uint8_t { kDefault, kTiled, kStream };

struct CudaBackendOptions {
  int device = 0;  // CUDA device index (cudaSetDevice)
  Nvfp4Activations nvfp4_activations = Nvfp4Activations::kNvfp4;
  // Synchronize and check for errors after every op, so an asynchronous fault names the op that caused it
  // (also set by the environment variable NINFER_CUDA_SYNC=1). Slow: for debugging and the GPU check script.
  bool sync_every_op = false;
  W4a4Decode w4a4_decode = W4a4Decode::kDefault;
};

// Whether this binary contains the CUDA backend (built with NINFER_CUDA).
bool cuda_backend_built();
// Throws Error(kUnsupported) in a build without CUDA, Error(kNotFound) when the device index does not exist (the
// message says how many devices the runtime sees and why none is usable), Error(kInternal) on a CUDA failure.
std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options = {});

}  // namespace ninfer
