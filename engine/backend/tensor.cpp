#include "engine/backend/tensor.h"

#include <fmt/format.h>

#include "engine/backend/backend.h"
#include "engine/core/error.h"

namespace ninfer {

namespace {

void set_shape(Tensor& t, std::span<const int64_t> shape) {
  if (shape.size() == 0 || shape.size() > Tensor::kMaxDims)
    fail(ErrorKind::kInvalidArgument, "tensor rank {} not in [1, {}]", shape.size(), Tensor::kMaxDims);
  t.ndim = static_cast<int>(shape.size());
  size_t i = 0;
  for (int64_t d : shape) {
    if (d < 0) fail(ErrorKind::kInvalidArgument, "negative tensor dimension {}", d);
    t.shape[i++] = d;
  }
  for (; i < Tensor::kMaxDims; ++i) t.shape[i] = 1;
}

}  // namespace

Tensor Tensor::make(void* data, DType dtype, std::initializer_list<int64_t> shape, Device device) {
  return make(data, dtype, std::span<const int64_t>(shape.begin(), shape.size()), device);
}

Tensor Tensor::make(void* data, DType dtype, std::span<const int64_t> shape, Device device) {
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  t.device = device;
  set_shape(t, shape);
  int64_t s = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    t.stride[static_cast<size_t>(d)] = s;
    s *= t.shape[static_cast<size_t>(d)];
  }
  return t;
}

Tensor Tensor::strided(void* data, DType dtype, std::initializer_list<int64_t> shape,
                       std::initializer_list<int64_t> stride, Device device) {
  if (stride.size() != shape.size())
    fail(ErrorKind::kInvalidArgument, "tensor has {} dims but {} strides", shape.size(), stride.size());
  Tensor t = make(data, dtype, shape, device);
  size_t i = 0;
  for (int64_t s : stride) t.stride[i++] = s;
  return t;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= shape[static_cast<size_t>(d)];
  return n;
}

bool Tensor::is_contiguous() const {
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (shape[static_cast<size_t>(d)] != 1 && stride[static_cast<size_t>(d)] != s) return false;
    s *= shape[static_cast<size_t>(d)];
  }
  return true;
}

bool Tensor::rows_uniform() const {
  if (ndim == 0) return true;
  if (stride[static_cast<size_t>(ndim - 1)] != 1 && shape[static_cast<size_t>(ndim - 1)] != 1) return false;
  for (int d = 0; d + 2 < ndim; ++d) {
    const auto du = static_cast<size_t>(d);
    if (shape[du] != 1 && stride[du] != stride[du + 1] * shape[du + 1]) return false;
  }
  return true;
}

Tensor Tensor::slice0(int64_t begin, int64_t end) const {
  if (ndim == 0 || begin < 0 || end < begin || end > shape[0])
    fail(ErrorKind::kInvalidArgument, "slice [{}, {}) out of range for {}", begin, end, describe());
  Tensor t = *this;
  t.data = static_cast<char*>(data) + begin * stride[0] * static_cast<int64_t>(dtype_element_bytes(dtype));
  t.shape[0] = end - begin;
  return t;
}

Tensor Tensor::reshape(std::initializer_list<int64_t> new_shape) const {
  if (!is_contiguous()) fail(ErrorKind::kInvalidArgument, "reshape of a non-contiguous tensor {}", describe());
  Tensor t = make(data, dtype, new_shape, device);
  if (t.numel() != numel())
    fail(ErrorKind::kInvalidArgument, "reshape of {} to {} elements", describe(), t.numel());
  return t;
}

void* Tensor::at(int64_t i0, int64_t i1, int64_t i2, int64_t i3) const {
  const int64_t off = i0 * stride[0] + i1 * stride[1] + i2 * stride[2] + i3 * stride[3];
  return static_cast<char*>(data) + off * static_cast<int64_t>(dtype_element_bytes(dtype));
}

std::string Tensor::describe() const {
  std::string s = fmt::format("{}[", dtype_name(dtype));
  for (int d = 0; d < ndim; ++d) s += fmt::format("{}{}", d ? "," : "", shape[static_cast<size_t>(d)]);
  s += "]";
  if (!is_contiguous()) {
    s += " strides[";
    for (int d = 0; d < ndim; ++d) s += fmt::format("{}{}", d ? "," : "", stride[static_cast<size_t>(d)]);
    s += "]";
  }
  s += device == Device::kCpu ? " cpu" : " cuda";
  return s;
}

Tensor Buffer::view(DType dtype, std::initializer_list<int64_t> shape) const {
  Tensor t = Tensor::make(memory.get(), dtype, shape, device);
  const uint64_t need = static_cast<uint64_t>(t.numel()) * dtype_element_bytes(dtype);
  if (need > bytes) fail(ErrorKind::kInvalidArgument, "view {} needs {} bytes, buffer has {}", t.describe(), need, bytes);
  return t;
}

void Backend::begin_graph_capture(std::vector<std::span<const int32_t>>) {
  fail(ErrorKind::kUnsupported, "the {} backend does not record op graphs", name());
}

std::unique_ptr<OpGraph> Backend::end_graph_capture() {
  fail(ErrorKind::kUnsupported, "the {} backend does not record op graphs", name());
}

}  // namespace ninfer
