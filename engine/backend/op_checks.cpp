#include "engine/backend/op_checks.h"

#include <string>

#include "engine/core/error.h"

namespace ninfer {

namespace {
const char* device_name(Device d) { return d == Device::kCpu ? "cpu" : "cuda"; }
}  // namespace

void check_on(const char* op, const char* arg, const Tensor& t, Device device) {
  if (t.device != device)
    fail(ErrorKind::kInvalidArgument, "{}: {} is not a {} tensor ({})", op, arg, device_name(device), t.describe());
  if (t.data == nullptr && t.numel() > 0) fail(ErrorKind::kInvalidArgument, "{}: {} has no data", op, arg);
  if (t.ndim > 0 && t.row_size() > 1 && t.stride[static_cast<size_t>(t.ndim - 1)] != 1)
    fail(ErrorKind::kInvalidArgument, "{}: {} must be contiguous in its last dim ({})", op, arg, t.describe());
}

void check_f32_on(const char* op, const char* arg, const Tensor& t, Device device) {
  check_on(op, arg, t, device);
  if (t.dtype != DType::kF32) fail(ErrorKind::kInvalidArgument, "{}: {} must be f32, got {}", op, arg, t.describe());
}

void check_weight_on(const char* op, const char* arg, const Tensor& t, Device device) {
  check_on(op, arg, t, device);
  if (t.dtype != DType::kF32 && t.dtype != DType::kBF16 && t.dtype != DType::kF16)
    fail(ErrorKind::kUnsupported, "{}: {} dtype {} not supported (f32/bf16/f16)", op, arg, t.describe());
  if (!t.rows_uniform()) fail(ErrorKind::kInvalidArgument, "{}: {} rows must be equally spaced ({})", op, arg, t.describe());
}

void check_vector_on(const char* op, const char* arg, const Tensor& w, int64_t n, Device device) {
  check_weight_on(op, arg, w, device);
  if (w.ndim != 1 || w.dim(0) != n)
    fail(ErrorKind::kInvalidArgument, "{}: {} must be [{}], got {}", op, arg, n, w.describe());
}

void check_dims(const char* op, const char* arg, const Tensor& t, std::initializer_list<int64_t> shape) {
  bool ok = t.ndim == static_cast<int>(shape.size());
  size_t i = 0;
  for (int64_t d : shape) {
    if (ok && d >= 0 && t.shape[i] != d) ok = false;
    ++i;
  }
  if (!ok) {
    std::string want;
    for (int64_t d : shape) want += fmt::format("{}{}", want.empty() ? "" : ",", d < 0 ? std::string("*") : std::to_string(d));
    fail(ErrorKind::kInvalidArgument, "{}: {} must be [{}], got {}", op, arg, want, t.describe());
  }
}

void check_same_shape(const char* op, const char* arg, const Tensor& t, const Tensor& ref) {
  bool ok = t.ndim == ref.ndim;
  for (int d = 0; ok && d < t.ndim; ++d) ok = t.shape[static_cast<size_t>(d)] == ref.shape[static_cast<size_t>(d)];
  if (!ok) fail(ErrorKind::kInvalidArgument, "{}: {} is {}, expected the shape of {}", op, arg, t.describe(), ref.describe());
}

void check_batch(const char* op, std::span<const int32_t> q_start, int64_t tokens) {
  if (q_start.empty()) fail(ErrorKind::kInvalidArgument, "{}: q_start is empty (needs S+1 entries)", op);
  if (q_start.front() != 0 || q_start.back() != tokens)
    fail(ErrorKind::kInvalidArgument, "{}: q_start must run from 0 to T={} (got {}..{})", op, tokens, q_start.front(),
         q_start.back());
  for (size_t s = 1; s < q_start.size(); ++s)
    if (q_start[s] < q_start[s - 1]) fail(ErrorKind::kInvalidArgument, "{}: q_start decreases at {}", op, s);
}

}  // namespace ninfer
