// The CUDA backend entry of a build without CUDA (engine/CMakeLists.txt picks this file or engine/backend/cuda/).
#include "engine/backend/cuda_backend.h"

#include "engine/core/error.h"

namespace ninfer {

bool cuda_backend_built() { return false; }

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions&) {
  fail(ErrorKind::kUnsupported,
       "this ninfer build has no CUDA backend (configure with -DNINFER_CUDA=ON and a CUDA toolkit, e.g. the "
       "linux-cuda preset)");
}

}  // namespace ninfer
