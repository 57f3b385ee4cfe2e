#include "engine/backend/checks/linear_checks.h"

#include "engine/artifact/dtype.h"
#include "engine/backend/op_checks.h"
#include "engine/core/error.h"

namespace ninfer {

void check_nvfp4_weight_on(const char* op, const Tensor& w, Device device) {
  if (w.dtype != DType::kNVFP4) fail(ErrorKind::kInvalidArgument, "{}: weight {} is not nvfp4", op, w.describe());
  check_on(op, "w", w, device);
  if (w.ndim != 2) fail(ErrorKind::kInvalidArgument, "{}: nvfp4 weight must be [N, K], got {}", op, w.describe());
  const int64_t K = w.dim(1);
  if (K % static_cast<int64_t>(kNvfp4BlockSize) != 0 || w.stride[0] != K || w.stride[1] != 1)
    fail(ErrorKind::kInvalidArgument, "{}: nvfp4 weight {} must be a whole contiguous entry with K % 16 == 0", op,
         w.describe());
}

LinearDims check_linear(const Tensor& y, const Tensor& x, const Tensor& w, Device device) {
  check_f32_on("linear", "y", y, device);
  check_f32_on("linear", "x", x, device);
  if (w.dtype == DType::kNVFP4) {
    check_nvfp4_weight_on("linear", w, device);
  } else {
    check_weight_on("linear", "w", w, device);
    if (w.ndim != 2) fail(ErrorKind::kInvalidArgument, "linear: w must be [N, K], got {}", w.describe());
  }
  if (!x.rows_uniform() || !y.rows_uniform())
    fail(ErrorKind::kInvalidArgument, "linear: x {} and y {} need equally spaced rows", x.describe(), y.describe());
  const LinearDims d{x.rows(), w.dim(0), x.row_size()};
  if (w.dim(1) != d.K || y.rows() != d.M || y.row_size() != d.N)
    fail(ErrorKind::kInvalidArgument, "linear: y {} = x {} · wᵀ {} shape mismatch", y.describe(), x.describe(),
         w.describe());
  if (d.M > 0 && d.N > 0 && y.data == x.data)
    fail(ErrorKind::kInvalidArgument, "linear: y must not alias x ({})", x.describe());
  return d;
}

}  // namespace ninfer
