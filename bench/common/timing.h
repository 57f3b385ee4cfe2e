// Owns the benchmarks' repeat-and-take-the-median timer.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace ninfer::bench {

// Median wall seconds of `reps` runs of fn, after one untimed warm-up run when `warmup`.
inline double median_seconds(int reps, const std::function<void()>& fn, bool warmup = true) {
  if (warmup) fn();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace ninfer::bench
