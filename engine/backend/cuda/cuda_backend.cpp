// The CUDA backend's device, stream, memory and copies; the ops live in the cuda_*.cpp files beside it.
#include "engine/backend/cuda/cuda_backend.h"

#include <cstdlib>
#include <cstring>

#include <spdlog/spdlog.h>

#include "engine/backend/op_checks.h"
#include "engine/core/error.h"
#include "kernels/cuda_check.h"

namespace ninfer {

bool cuda_backend_built() { return true; }

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options) {
  return std::make_unique<cuda::CudaBackend>(options);
}

}  // namespace ninfer

namespace ninfer::cuda {

namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

// Bytes of one element of a plain (copyable) dtype; nvfp4 has none and is copied as raw bytes by the weight upload.
size_t element_bytes(const char* op, const Tensor& t) {
  const size_t b = dtype_element_bytes(t.dtype);
  if (b == 0) fail(ErrorKind::kUnsupported, "{}: {} has no element size (copy nvfp4 tensors as bytes)", op, t.describe());
  return b;
}

cudaMemcpyKind copy_kind(Device dst, Device src) {
  if (dst == Device::kCuda) return src == Device::kCuda ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
  return src == Device::kCuda ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost;
}

}  // namespace

CudaBackend::CudaBackend(const CudaBackendOptions& options)
    : device_(options.device),
      nvfp4_activations_(options.nvfp4_activations),
      w4a4_gemv_(options.w4a4_decode == W4a4Decode::kTiled    ? kern::W4a4Gemv::kTiled
                 : options.w4a4_decode == W4a4Decode::kStream ? kern::W4a4Gemv::kStream
                                                              : kern::kW4a4GemvDefault),
      sync_every_op_(options.sync_every_op || env_flag("NINFER_CUDA_SYNC")) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    fail(ErrorKind::kNotFound, "cuda backend: no usable CUDA device ({}: {})", cudaGetErrorName(err),
         cudaGetErrorString(err));
  }
  if (device_ < 0 || device_ >= count)
    fail(ErrorKind::kNotFound, "cuda backend: device {} does not exist (the CUDA runtime sees {} device{})", device_,
         count, count == 1 ? "" : "s");
  NINFER_CUDA_CHECK(cudaSetDevice(device_));
  cudaDeviceProp prop{};
  NINFER_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  cc_major_ = prop.major;
  cc_minor_ = prop.minor;
  device_name_ = prop.name;
  NINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  arena_ = std::make_shared<DeviceArena>(device_);
  NINFER_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&fault_host_), sizeof(kern::DeviceFault), cudaHostAllocMapped));
  std::memset(fault_host_, 0, sizeof(kern::DeviceFault));
  NINFER_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&fault_device_), fault_host_, 0));
  if (sync_every_op_) spdlog::warn("cuda backend: synchronizing after every op (NINFER_CUDA_SYNC)");
}

void CudaBackend::bind_thread() { NINFER_CUDA_CHECK(cudaSetDevice(device_)); }

CudaBackend::~CudaBackend() {
  if (stream_) {
    (void)cudaStreamSynchronize(stream_);
    staging_.reset();
    (void)cudaStreamDestroy(stream_);
  }
  if (fault_host_) (void)cudaFreeHost(fault_host_);
}

std::string CudaBackend::name() const {
  return fmt::format("cuda({} sm_{}{}, device {}, nvfp4 {})", device_name_, cc_major_, cc_minor_, device_,
                     nvfp4_activations_ == Nvfp4Activations::kNvfp4 ? "w4a4" : "w4a16");
}

Buffer CudaBackend::alloc(size_t bytes) {
  if (recording_)
    fail(ErrorKind::kUnsupported, "cuda graph capture: an op allocates {} bytes (the step must run eagerly once "
         "before it is recorded)", bytes);
  void* p = arena_->allocate(bytes);
  Buffer b;
  // The deleter holds the arena, so a Buffer may outlive the backend (its memory then returns to the cache).
  b.memory = std::shared_ptr<void>(p, [arena = arena_](void* q) { arena->release(q); });
  b.bytes = bytes;
  b.device = Device::kCuda;
  NINFER_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_));
  return b;
}

namespace {
// Row planes of a view whose leading dimensions need not collapse: plane p holds the rows of dimension ndim-2
// (equally spaced by stride[ndim-2]) at the p-th index of the dimensions before it. A rows_uniform view is one plane.
struct RowPlanes {
  int64_t count = 1, rows = 1;
};
// The planes of two same-shape views taken together: one when both have equally spaced rows.
RowPlanes row_planes(const Tensor& a, const Tensor& b) {
  if ((a.rows_uniform() && b.rows_uniform()) || a.ndim < 3) return {1, a.rows()};
  const int64_t inner = a.dim(a.ndim - 2);
  return {a.rows() / inner, inner};
}
// Byte offset of plane p (its first row).
size_t plane_offset(const Tensor& t, int64_t p, size_t eb) {
  int64_t off = 0;
  for (int d = t.ndim - 3; d >= 0 && p > 0; --d) {
    const int64_t n = t.dim(d);
    off += (p % n) * t.stride[static_cast<size_t>(d)];
    p /= n;
  }
  return static_cast<size_t>(off) * eb;
}
}  // namespace

void CudaBackend::copy(const Tensor& dst, const Tensor& src) {
  for (const Tensor* t : {&dst, &src})
    if (t->device != Device::kCpu && t->device != Device::kCuda)
      fail(ErrorKind::kInvalidArgument, "copy: unknown device of {}", t->describe());
  check_on("copy", "dst", dst, dst.device);
  check_on("copy", "src", src, src.device);
  if (dst.dtype != src.dtype) fail(ErrorKind::kInvalidArgument, "copy: dtype {} -> {}", src.describe(), dst.describe());
  check_same_shape("copy", "src", src, dst);
  if (src.numel() == 0) return;
  const size_t eb = element_bytes("copy", src);
  const size_t row_bytes = static_cast<size_t>(src.row_size()) * eb;
  const cudaMemcpyKind kind = copy_kind(dst.device, src.device);
  if (src.is_contiguous() && dst.is_contiguous()) {
    NINFER_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, row_bytes * static_cast<size_t>(src.rows()), kind, stream_));
    after_launch("copy");
    return;
  }
  // One 2D copy per row plane: a single one when both sides have equally spaced rows, else one per index of the
  // outer dimensions (the [T, heads, dim] views with padded token rows).
  const RowPlanes planes = row_planes(src, dst);
  const size_t dpitch = planes.rows > 1 ? static_cast<size_t>(dst.row_stride()) * eb : row_bytes;
  const size_t spitch = planes.rows > 1 ? static_cast<size_t>(src.row_stride()) * eb : row_bytes;
  for (int64_t p = 0; p < planes.count; ++p) {
    NINFER_CUDA_CHECK(cudaMemcpy2DAsync(static_cast<char*>(dst.data) + plane_offset(dst, p, eb), dpitch,
                                        static_cast<const char*>(src.data) + plane_offset(src, p, eb), spitch, row_bytes,
                                        static_cast<size_t>(planes.rows), kind, stream_));
  }
  after_launch("copy");
}

void CudaBackend::zero(const Tensor& t) {
  check_on("zero", "t", t, Device::kCuda);
  if (t.numel() == 0) return;
  const size_t eb = element_bytes("zero", t);
  const size_t row_bytes = static_cast<size_t>(t.row_size()) * eb;
  if (t.is_contiguous()) {
    NINFER_CUDA_CHECK(cudaMemsetAsync(t.data, 0, row_bytes * static_cast<size_t>(t.rows()), stream_));
  } else {
    const RowPlanes planes = row_planes(t, t);
    const size_t pitch = planes.rows > 1 ? static_cast<size_t>(t.row_stride()) * eb : row_bytes;
    for (int64_t p = 0; p < planes.count; ++p)
      NINFER_CUDA_CHECK(cudaMemset2DAsync(static_cast<char*>(t.data) + plane_offset(t, p, eb), pitch, 0, row_bytes,
                                          static_cast<size_t>(planes.rows), stream_));
  }
  after_launch("zero");
}

void CudaBackend::synchronize() {
  if (recording_) fail(ErrorKind::kInternal, "cuda backend: synchronize() during a graph capture");
  NINFER_CUDA_CHECK(cudaStreamSynchronize(stream_));
  staging_.reset();
  raise_fault();
}

void CudaBackend::raise_fault() {
  volatile kern::DeviceFault* f = fault_host_;
  const auto code = static_cast<kern::FaultCode>(f->code);
  if (code == kern::FaultCode::kNone) return;
  const int64_t a = f->a, b = f->b, c = f->c;
  f->code = 0;
  switch (code) {
    case kern::FaultCode::kKvNonFinite:
      fail(ErrorKind::kInvalidArgument, "kv_write: the {} row of token {} (kv head {}) holds inf or NaN; an int8 "
           "cache cannot store it (docs/kv-cache.md)", c == 0 ? "K" : "V", a, b);
    case kern::FaultCode::kIndexRange: {
      static constexpr const char* kWhat[] = {"attention: block table entry", "kv_write: slot",
                                              "GDN op: state or checkpoint row", "embedding: token id"};
      const auto i = static_cast<size_t>(a);
      fail(ErrorKind::kInvalidArgument, "{} {} is outside [0, {})", i < 4 ? kWhat[i] : "index", b, c);
    }
    case kern::FaultCode::kPlanOverflow:
      fail(ErrorKind::kInternal, "cuda backend: the attention work plan has {} items, above the {} its launch was "
           "sized for (kernels/attention/attention_plan.h)", b, c);
    default: fail(ErrorKind::kInternal, "cuda backend: unknown device fault code {}", static_cast<int>(code));
  }
}

void* CudaBackend::workspace(const char* name, size_t bytes) {
  auto it = workspaces_.find(std::string_view(name));
  if (it == workspaces_.end()) it = workspaces_.emplace(name, Buffer{}).first;
  if (it->second.bytes < bytes) {
    if (recording_)
      fail(ErrorKind::kUnsupported, "cuda graph capture: workspace '{}' would grow from {} to {} bytes (the step "
           "must run eagerly once before it is recorded)", name, it->second.bytes, bytes);
    it->second = alloc(bytes + bytes / 4);
    ++memory_epoch_;  // the old buffer goes back to the arena: graphs that point at it are stale
  }
  return it->second.data();
}

void CudaBackend::after_launch(const char* op) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess && sync_every_op_) err = cudaStreamSynchronize(stream_);
  if (err != cudaSuccess)
    fail(ErrorKind::kInternal, "cuda backend: {} failed on device {}: {} ({})", op, device_, cudaGetErrorName(err),
         cudaGetErrorString(err));
  if (sync_every_op_) raise_fault();
}

}  // namespace ninfer::cuda
