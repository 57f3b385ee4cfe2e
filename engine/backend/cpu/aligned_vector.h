// Owns the CPU kernels' 64-byte-aligned buffers: a std::vector whose storage
// starts on a cache line.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace ninfer::cpu {

// A large heap block from malloc starts 16 bytes past a page boundary, so a
// kernel's 32- or 64-byte loads from a plain std::vector split cache lines
// (measured: the W4A4 GEMM at M = 512 ran at 98 GFLOP/s from such a buffer, 141
// from an aligned one).
template <typename T> struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <typename U> CacheLineAllocator(const CacheLineAllocator<U> &) {}
  T *allocate(std::size_t n) {
    return static_cast<T *>(::operator new(n * sizeof(T), kAlign));
  }
  void deallocate(T *p, std::size_t) { ::operator delete(p, kAlign); }
  template <typename U> bool operator==(const CacheLineAllocator<U> &) const {
    return true;
  }
};

template <typename T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

// v.resize(n), allocating exactly n elements when it must grow (not the
// doubling of a plain resize): a CPU backend buffer's capacity is then the
// largest request it served, which the host memory plan counts
// (cpu_workspace.h).
template <typename V> void resize_exact(V &v, std::size_t n) {
  if (n > v.capacity())
    v.reserve(n);
  v.resize(n);
}

} // namespace ninfer::cpu
