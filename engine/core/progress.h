// Owns the terminal progress bar used by long work (packing, loading, benchmarks).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ninfer {

// Draws "label [#####     ]  42% 1.2/2.9 GB 812 MB/s" on stderr, at most ~10 times a second.
// On a non-terminal stderr it prints nothing until finish(), which writes one summary line.
// With a `unit` (e.g. "tok") it counts items instead: "label [###   ]  42% 12288/29184 tok 812 tok/s".
// Not thread-safe: one owner advances it.
class ProgressBar {
 public:
  ProgressBar(std::string label, uint64_t total_bytes, bool enabled = true);
  ProgressBar(std::string label, std::string unit, uint64_t total, bool enabled = true);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void advance(uint64_t bytes);
  void finish();

 private:
  void draw(bool final_line);

  std::string label_;
  uint64_t total_;
  uint64_t done_ = 0;
  std::string unit_;  // empty: bytes
  bool enabled_;
  bool tty_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace ninfer
