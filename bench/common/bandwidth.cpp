#include "bench/common/bandwidth.h"

#include "bench/common/timing.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

namespace ninfer::bench {

namespace {

void parallel(int threads, const std::function<void(int)>& fn) {
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i) ts.emplace_back(fn, i);
  for (auto& th : ts) th.join();
}

}  // namespace

double memcpy_bandwidth(size_t bytes, int threads, int reps) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  const size_t per = bytes / static_cast<size_t>(threads);
  const double t = median_seconds(reps, [&] {
    parallel(threads, [&](int i) { std::memcpy(dst.data() + i * per, src.data() + i * per, per); });
  }, /*warmup=*/false);
  return double(per * static_cast<size_t>(threads)) / t;
}

double read_bandwidth(size_t bytes, int threads, int reps) {
  std::vector<uint64_t> src(bytes / 8, 3);
  std::vector<uint64_t> sums(static_cast<size_t>(threads) * 8);
  const size_t per = src.size() / static_cast<size_t>(threads);
  const double t = median_seconds(reps, [&] {
    parallel(threads, [&](int i) {
      uint64_t a = 0, b = 0, c = 0, d = 0;
      const uint64_t* p = src.data() + static_cast<size_t>(i) * per;
      for (size_t j = 0; j + 4 <= per; j += 4) a += p[j], b += p[j + 1], c += p[j + 2], d += p[j + 3];
      sums[static_cast<size_t>(i) * 8] = a + b + c + d;
    });
  }, /*warmup=*/false);
  return double(per * 8 * static_cast<size_t>(threads)) / t;
}

}  // namespace ninfer::bench
