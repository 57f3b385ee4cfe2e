// Owns 64-byte-aligned, zeroed host allocations on every platform: std::aligned_alloc on POSIX, _aligned_malloc on
// Windows (neither MSVC's nor MinGW's C library has aligned_alloc).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>

#ifdef _WIN32
#include <malloc.h>
#endif

namespace ninfer {

// `bytes` rounded up to a multiple of 64 (at least 64), zeroed; nullptr when the allocation fails.
inline std::shared_ptr<void> aligned_zeroed(size_t bytes) {
  const size_t rounded = (bytes == 0 ? 64 : (bytes + 63) / 64 * 64);
#ifdef _WIN32
  void* p = _aligned_malloc(rounded, 64);
  auto release = [](void* q) { _aligned_free(q); };
#else
  void* p = std::aligned_alloc(64, rounded);
  auto release = [](void* q) { std::free(q); };
#endif
  if (!p) return nullptr;
  std::memset(p, 0, rounded);
  return std::shared_ptr<void>(p, release);
}

}  // namespace ninfer
