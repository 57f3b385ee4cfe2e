#include "engine/core/progress.h"

#include <cstdio>

#include <fmt/format.h>

#ifdef _WIN32
#include <io.h>
#define NINFER_ISATTY _isatty
#define NINFER_FILENO _fileno
#else
#include <unistd.h>
#define NINFER_ISATTY isatty
#define NINFER_FILENO fileno
#endif

namespace ninfer {

ProgressBar::ProgressBar(std::string label, uint64_t total_bytes, bool enabled)
    : label_(std::move(label)),
      total_(total_bytes),
      enabled_(enabled),
      tty_(NINFER_ISATTY(NINFER_FILENO(stderr)) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::ProgressBar(std::string label, std::string unit, uint64_t total, bool enabled)
    : ProgressBar(std::move(label), total, enabled) {
  unit_ = std::move(unit);
}

ProgressBar::~ProgressBar() {
  if (!finished_ && enabled_ && tty_) std::fputc('\n', stderr);
}

void ProgressBar::advance(uint64_t bytes) {
  done_ += bytes;
  if (!enabled_ || !tty_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(false);
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  if (enabled_) draw(true);
}

void ProgressBar::draw(bool final_line) {
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double frac = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 1.0;
  if (frac > 1.0) frac = 1.0;
  constexpr int kWidth = 30;
  int filled = static_cast<int>(frac * kWidth);
  double rate = seconds > 0 ? static_cast<double>(done_) / seconds : 0.0;
  const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, ' ');
  std::string line = unit_.empty()
                         ? fmt::format("{} [{}] {:3.0f}% {:.2f}/{:.2f} GB {:.0f} MB/s {:.1f}s", label_, bar, frac * 100.0,
                                       done_ / 1e9, total_ / 1e9, rate / 1e6, seconds)
                         : fmt::format("{} [{}] {:3.0f}% {}/{} {} {:.0f} {}/s {:.1f}s", label_, bar, frac * 100.0, done_,
                                       total_, unit_, rate, unit_, seconds);
  if (tty_) {
    std::fprintf(stderr, "\r%s%s", line.c_str(), final_line ? "\n" : "");
  } else if (final_line) {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

}  // namespace ninfer
