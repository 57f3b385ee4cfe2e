// Owns the measured FMA peak the GEMM benchmarks report their GFLOP/s against (the compute roofline).
#pragma once

namespace ninfer::bench {

// f32 FLOP/s of `threads` threads each running 12 independent 8-wide FMA chains (AVX2/FMA, registers only), the
// best of `reps` runs; 0 where the build or CPU has no AVX2/FMA.
double fma_peak_flops(int threads, int reps);

}  // namespace ninfer::bench
