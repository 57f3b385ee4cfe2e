// Owns the CUDA backend's device memory: a caching arena over cudaMalloc (never managed memory) with size classes,
// reuse of freed blocks, a retry after releasing the cache when the device is full, and usage counters.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>

namespace ninfer::cuda {

class DeviceArena {
 public:
  explicit DeviceArena(int device) : device_(device) {}
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  // At least `bytes` of device memory (256-byte aligned; cudaMalloc's alignment). Throws Error(kOutOfMemory) with the
  // bytes asked, in use, cached and the device's free/total when even an emptied cache cannot satisfy it.
  void* allocate(size_t bytes);
  // Returns a block to the cache (thread-safe; Buffer deleters call it).
  void release(void* p);
  // Frees every cached block back to the driver.
  void trim();

  size_t bytes_in_use() const;
  size_t bytes_cached() const;
  size_t peak_bytes_in_use() const;
  // The size class a request of `bytes` is served from.
  static size_t round_size(size_t bytes);

 private:
  int device_;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;  // size class -> cached block
  std::map<void*, size_t> live_;       // block -> size class
  size_t in_use_ = 0, cached_ = 0, peak_ = 0;
};

}  // namespace ninfer::cuda
