#include "engine/backend/weight_store.h"


#include "engine/core/error.h"

namespace ninfer {

uint64_t tensor_storage_bytes(const Tensor& t) {
  if (t.dtype == DType::kNVFP4) {
    const auto layout = nvfp4_layout(std::span<const int64_t>(t.shape.data(), static_cast<size_t>(t.ndim)));
    if (!layout) fail(ErrorKind::kInvalidArgument, "nvfp4 tensor {} has no valid layout", t.describe());
    return layout->total_bytes;
  }
  // A strided view (a row-parallel column shard under TP) is counted as the contiguous copy it is uploaded as.
  if (!t.is_contiguous() && !t.rows_uniform())
    fail(ErrorKind::kInvalidArgument, "weight {} has neither contiguous nor uniform rows", t.describe());
  return static_cast<uint64_t>(t.numel()) * dtype_element_bytes(t.dtype);
}

Tensor WeightStore::place(const Tensor& host, const std::string& name) {
  if (host.data == nullptr || !on_device()) return host;
  if (host.device != Device::kCpu)
    fail(ErrorKind::kInvalidArgument, "weight {}: expected a host view to upload, got {}", name, host.describe());
  const uint64_t bytes = tensor_storage_bytes(host);
  // The same host storage placed twice (a tied lm_head is the embedding) shares one device copy.
  if (auto it = placed_.find(host.data); it != placed_.end() && it->second.bytes >= bytes) {
    Tensor d = host;
    d.data = it->second.data;
    d.device = backend_.device();
    return d;
  }
  Buffer b = backend_.alloc(bytes);
  if (host.dtype != DType::kNVFP4 && !host.is_contiguous()) {
    // Rows at a stride (a column shard): copied row by row into the contiguous device tensor.
    const int64_t rows = host.ndim > 1 ? host.rows() : 1, n = host.row_size();
    backend_.copy(Tensor::make(b.data(), host.dtype, {rows, n}, b.device),
                  Tensor::strided(host.data, host.dtype, {rows, n}, {host.row_stride(), 1}, Device::kCpu));
  } else {
    // Copied as raw bytes: the same layout on the device (nvfp4 has no element size).
    backend_.copy(Tensor::make(b.data(), DType::kI8, {static_cast<int64_t>(bytes)}, b.device),
                  Tensor::make(host.data, DType::kI8, {static_cast<int64_t>(bytes)}, Device::kCpu));
  }
  Tensor d = host;
  d.data = b.data();
  d.device = b.device;
  int64_t s = 1;  // the device copy is contiguous
  for (int i = d.ndim - 1; i >= 0; --i) {
    d.stride[static_cast<size_t>(i)] = s;
    s *= d.shape[static_cast<size_t>(i)];
  }
  placed_[host.data] = {b.data(), bytes};
  buffers_.push_back(std::move(b));
  device_bytes_ += bytes;
  return d;
}

}  // namespace ninfer
