// The CUDA backend entries of a build without CUDA (engine/CMakeLists.txt picks this file or engine/backend/cuda/).
#include "engine/backend/cuda_backend.h"
#include "engine/backend/cuda/nvfp4_quantize.h"

#include "engine/core/error.h"

namespace ninfer {

bool cuda_backend_built() { return false; }

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions&) {
  fail(ErrorKind::kUnsupported,
       "this ninfer build has no CUDA backend (configure with -DNINFER_CUDA=ON and a CUDA toolkit, e.g. the "
       "linux-cuda preset)");
}

namespace cuda {
// The op suite's quantizer hook links in every build; it is only reached on a CUDA backend.
Nvfp4QuantizedRows nvfp4_quantize_rows(Backend&, const Tensor&, float) {
  fail(ErrorKind::kUnsupported, "nvfp4_quantize_rows: this ninfer build has no CUDA backend");
}
}  // namespace cuda

}  // namespace ninfer
