// Owns the benchmarks' repeat-and-take-the-median timer.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <utility>
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

// Medians of `reps` runs each of a and b, timed alternately (a, b, a, b, ...) after one warm-up of each, so that a
// shared machine's load falls on both alike.
inline std::pair<double, double> median_seconds_pair(int reps, const std::function<void()>& a,
                                                     const std::function<void()>& b) {
  a();
  b();
  std::vector<double> ta, tb;
  for (int r = 0; r < reps; ++r) {
    ta.push_back(median_seconds(1, a, false));
    tb.push_back(median_seconds(1, b, false));
  }
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  return {ta[ta.size() / 2], tb[tb.size() / 2]};
}

}  // namespace ninfer::bench
