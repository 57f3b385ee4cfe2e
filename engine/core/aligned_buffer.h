// Owns host allocations on every platform: 64-byte-aligned blocks (std::aligned_alloc on POSIX, _aligned_malloc on
// Windows, as neither MSVC's nor MinGW's C library has aligned_alloc), and for large blocks the 2 MiB alignment and
// transparent-huge-page advice that a decode step's streaming reads need.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>

#ifdef _WIN32
#include <malloc.h>
#else
#include <sys/mman.h>
#endif

namespace ninfer {

// Blocks of at least this many bytes start on a 2 MiB boundary and, on Linux, are advised MADV_HUGEPAGE (which the
// kernel honours in its default "madvise" mode). A decode step streams the weights and the KV cache once per token;
// on this project's CPU, weights in such memory decode 1.2-1.3x faster than the same bytes on the file's 4 KiB page-
// cache pages (docs/benchmarks.md, "Where the weights live").
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// The bytes aligned_host(bytes) hands out: `bytes` rounded up to a multiple of 64 (at least 64).
inline size_t aligned_host_size(size_t bytes) { return bytes == 0 ? 64 : (bytes + 63) / 64 * 64; }

// aligned_host_size(bytes) uninitialised bytes, aligned to `align` (a power of two, at least 64; 2 MiB and huge-page
// advised from kHugePageBytes on); nullptr when the allocation fails.
inline std::shared_ptr<void> aligned_host(size_t bytes, size_t align = 64) {
  const size_t rounded = aligned_host_size(bytes);
  if (rounded >= kHugePageBytes && align < kHugePageBytes) align = kHugePageBytes;
#ifdef _WIN32
  void* p = _aligned_malloc(rounded, align);
  auto release = [](void* q) { _aligned_free(q); };
#else
  void* p = std::aligned_alloc(align, (rounded + align - 1) / align * align);
  auto release = [](void* q) { std::free(q); };
#if defined(MADV_HUGEPAGE)
  // Advice only: a kernel without transparent huge pages keeps 4 KiB pages, and the block works the same.
  if (p && rounded >= kHugePageBytes) (void)::madvise(p, (rounded + 4095) / 4096 * 4096, MADV_HUGEPAGE);
#endif
#endif
  if (!p) return nullptr;
  return std::shared_ptr<void>(p, release);
}

// aligned_host(bytes), zeroed.
inline std::shared_ptr<void> aligned_zeroed(size_t bytes) {
  std::shared_ptr<void> p = aligned_host(bytes);
  if (p) std::memset(p.get(), 0, aligned_host_size(bytes));
  return p;
}

}  // namespace ninfer
