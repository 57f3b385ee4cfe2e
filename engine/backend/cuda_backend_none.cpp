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
// The op suite's and the bench's W4A4 hooks link in every build; they are only reached on a CUDA backend.
Nvfp4QuantizedRows nvfp4_quantize_rows(Backend&, const Tensor&, float, kern::W4a4Gemv) {
  fail(ErrorKind::kUnsupported, "nvfp4_quantize_rows: this ninfer build has no CUDA backend");
}
void linear_w4a4(Backend&, const Tensor&, const Tensor&, const Tensor&, bool, kern::W4a4Gemv) {
  fail(ErrorKind::kUnsupported, "linear_w4a4: this ninfer build has no CUDA backend");
}
}  // namespace cuda

}  // namespace ninfer
