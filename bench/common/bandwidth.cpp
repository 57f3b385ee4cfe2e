#include "bench/common/bandwidth.h"

#include "bench/common/timing.h"
#include "engine/core/aligned_buffer.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <thread>
#include <vector>

namespace ninfer::bench {

namespace {

void parallel(int threads, const std::function<void(int)>& fn) {
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i) ts.emplace_back(fn, i);
  for (auto& th : ts) th.join();
}

// `bytes` of the memory decode reads its weights and KV from (aligned_host: 2 MiB aligned, huge-page advised), filled
// with `value`, so that a sweep and the model stream the same kind of pages.
std::shared_ptr<void> sweep_buffer(size_t bytes, int value) {
  std::shared_ptr<void> p = aligned_host(bytes);
  if (!p) throw std::bad_alloc();
  std::memset(p.get(), value, bytes);
  return p;
}

}  // namespace

double memcpy_bandwidth(size_t bytes, int threads, int reps) {
  const std::shared_ptr<void> src_buf = sweep_buffer(bytes, 1), dst_buf = sweep_buffer(bytes, 0);
  const char* src = static_cast<const char*>(src_buf.get());
  char* dst = static_cast<char*>(dst_buf.get());
  const size_t per = bytes / static_cast<size_t>(threads);
  const double t = median_seconds(reps, [&] {
    parallel(threads, [&](int i) { std::memcpy(dst + i * per, src + i * per, per); });
  }, /*warmup=*/false);
  return double(per * static_cast<size_t>(threads)) / t;
}

double read_bandwidth(size_t bytes, int threads, int reps) {
  const std::shared_ptr<void> src_buf = sweep_buffer(bytes / 8 * 8, 3);
  const auto* src = static_cast<const uint64_t*>(src_buf.get());
  std::vector<uint64_t> sums(static_cast<size_t>(threads) * 8);
  const size_t per = bytes / 8 / static_cast<size_t>(threads);
  const double t = median_seconds(reps, [&] {
    parallel(threads, [&](int i) {
      uint64_t a = 0, b = 0, c = 0, d = 0;
      const uint64_t* p = src + static_cast<size_t>(i) * per;
      for (size_t j = 0; j + 4 <= per; j += 4) a += p[j], b += p[j + 1], c += p[j + 2], d += p[j + 3];
      sums[static_cast<size_t>(i) * 8] = a + b + c + d;
    });
  }, /*warmup=*/false);
  return double(per * 8 * static_cast<size_t>(threads)) / t;
}

}  // namespace ninfer::bench
