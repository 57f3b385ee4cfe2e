#include "engine/backend/cuda/device_arena.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <iterator>

#include "engine/core/error.h"
#include "kernels/cuda_check.h"

namespace ninfer::cuda {

namespace {
constexpr size_t kSmall = size_t{1} << 20;  // up to 1 MiB: 512-byte classes
constexpr size_t kLargeStep = size_t{2} << 20;
}  // namespace

size_t DeviceArena::round_size(size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  if (bytes <= kSmall) return (bytes + 511) / 512 * 512;
  return (bytes + kLargeStep - 1) / kLargeStep * kLargeStep;
}

DeviceArena::~DeviceArena() {
  // Live blocks belong to Buffers still held somewhere; only the cache is ours to free. cudaFree errors at exit
  // (driver shutting down) are not worth a throw from a destructor.
  std::lock_guard lock(mu_);
  for (auto& [size, p] : free_) (void)cudaFree(p);
  free_.clear();
}

void* DeviceArena::allocate(size_t bytes) {
  const size_t size = round_size(bytes);
  std::lock_guard lock(mu_);
  // The most recently released block of the class (LIFO: likely still in L2, and what a freed-then-reallocated
  // scratch buffer expects).
  if (auto [lo, hi] = free_.equal_range(size); lo != hi) {
    const auto it = std::prev(hi);
    void* p = it->second;
    free_.erase(it);
    cached_ -= size;
    live_[p] = size;
    in_use_ += size;
    peak_ = std::max(peak_, in_use_);
    return p;
  }
  NINFER_CUDA_CHECK(cudaSetDevice(device_));
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, size);
  if (err == cudaErrorMemoryAllocation && !free_.empty()) {
    (void)cudaGetLastError();
    for (auto& [s, q] : free_) NINFER_CUDA_CHECK(cudaFree(q));
    free_.clear();
    cached_ = 0;
    err = cudaMalloc(&p, size);
  }
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    fail(ErrorKind::kOutOfMemory,
         "cuda device {}: cannot allocate {} bytes ({} with rounding); in use by ninfer {} bytes, device free {} of "
         "{} bytes",
         device_, bytes, size, in_use_, free_b, total_b);
  }
  NINFER_CUDA_CHECK(err);
  live_[p] = size;
  in_use_ += size;
  peak_ = std::max(peak_, in_use_);
  return p;
}

void DeviceArena::release(void* p) {
  if (!p) return;
  std::lock_guard lock(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) return;  // not ours: a bug elsewhere, but never free foreign memory
  const size_t size = it->second;
  live_.erase(it);
  in_use_ -= size;
  free_.emplace(size, p);
  cached_ += size;
}

void DeviceArena::trim() {
  std::lock_guard lock(mu_);
  NINFER_CUDA_CHECK(cudaSetDevice(device_));
  for (auto& [size, p] : free_) NINFER_CUDA_CHECK(cudaFree(p));
  free_.clear();
  cached_ = 0;
}

size_t DeviceArena::bytes_in_use() const {
  std::lock_guard lock(mu_);
  return in_use_;
}
size_t DeviceArena::bytes_cached() const {
  std::lock_guard lock(mu_);
  return cached_;
}
size_t DeviceArena::peak_bytes_in_use() const {
  std::lock_guard lock(mu_);
  return peak_;
}

}  // namespace ninfer::cuda
