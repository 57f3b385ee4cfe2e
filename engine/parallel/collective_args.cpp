#include "engine/parallel/collective_args.h"

#include <cstring>

#include "engine/core/error.h"

namespace ninfer {

int64_t collective_rows(const Tensor& t) { return t.ndim > 1 ? t.rows() : 1; }

Tensor collective_view(const Tensor& t) {
  return Tensor::strided(t.data, DType::kF32, {collective_rows(t), t.row_size()}, {t.row_stride(), 1}, t.device);
}

bool collective_packed(const Tensor& t) { return collective_rows(t) == 1 || t.row_stride() == t.row_size(); }

void check_collective_arg(const char* op, const char* arg, const Tensor& t) {
  if (t.dtype != DType::kF32) fail(ErrorKind::kInvalidArgument, "{}: {} must be f32, got {}", op, arg, t.describe());
  if (!t.rows_uniform()) fail(ErrorKind::kInvalidArgument, "{}: {} needs uniform rows, got {}", op, arg, t.describe());
}

void pack_rows_to_host(std::vector<float>& out, const Tensor& t, Backend& backend) {
  const int64_t R = collective_rows(t), N = t.row_size();
  out.resize(static_cast<size_t>(R * N));
  if (t.device == Device::kCpu) {
    for (int64_t r = 0; r < R; ++r)
      std::memcpy(out.data() + r * N, static_cast<const float*>(t.data) + r * t.row_stride(), static_cast<size_t>(N) * 4);
    return;
  }
  backend.copy(Tensor::make(out.data(), DType::kF32, {R, N}, Device::kCpu), collective_view(t));
  backend.synchronize();
}

void unpack_rows_from_host(const Tensor& t, const float* in, Backend& backend) {
  const int64_t R = collective_rows(t), N = t.row_size();
  if (t.device == Device::kCpu) {
    for (int64_t r = 0; r < R; ++r)
      std::memcpy(static_cast<float*>(t.data) + r * t.row_stride(), in + r * N, static_cast<size_t>(N) * 4);
    return;
  }
  backend.copy(collective_view(t), Tensor::make(const_cast<float*>(in), DType::kF32, {R, N}, Device::kCpu));
}

}  // namespace ninfer
