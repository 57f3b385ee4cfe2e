// Kernel views (kernels/common/kview.h) of the tensors the CUDA ops have checked.
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/core/error.h"

namespace ninfer::cuda {

kern::KType ktype(DType dtype) {
  switch (dtype) {
    case DType::kF32: return kern::KType::kF32;
    case DType::kF16: return kern::KType::kF16;
    case DType::kBF16: return kern::KType::kBF16;
    case DType::kI8: return kern::KType::kI8;
    case DType::kI32: return kern::KType::kI32;
    case DType::kF8E4M3: return kern::KType::kF8E4M3;
    case DType::kNVFP4: return kern::KType::kNvfp4;
  }
  fail(ErrorKind::kInternal, "ktype: unknown dtype {}", static_cast<int>(dtype));
}

kern::Rows rows_of(const Tensor& t) {
  kern::Rows r;
  r.data = t.data;
  r.type = ktype(t.dtype);
  r.n = t.row_size();
  r.rows = t.rows();
  const int lead = t.ndim > 0 ? t.ndim - 1 : 0;
  if (lead > 3) fail(ErrorKind::kInvalidArgument, "rows_of: {} has more than 3 leading dims", t.describe());
  r.nlead = lead;
  for (int d = 0; d < lead; ++d) {
    r.lead[d] = t.shape[static_cast<size_t>(d)];
    r.lead_stride[d] = t.stride[static_cast<size_t>(d)];
  }
  return r;
}

}  // namespace ninfer::cuda
