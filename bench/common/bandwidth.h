// Owns the memory-bandwidth measurements the benchmarks put next to their numbers (the roofline).
#pragma once

#include <cstddef>

namespace ninfer::bench {

// memcpy of `bytes` split over `threads` threads, median of `reps`; bytes copied per second (each byte once).
double memcpy_bandwidth(size_t bytes, int threads, int reps);
// Read-only sweep (sum of 64-bit words) split over threads, median of `reps`; bytes read per second. Both sweeps run
// over huge-page memory (aligned_host), the kind the CPU backend decodes from.
double read_bandwidth(size_t bytes, int threads, int reps);

}  // namespace ninfer::bench
