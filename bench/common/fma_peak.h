// Owns the measured FMA peak the GEMM benchmarks report their GFLOP/s against (the compute roofline).
#pragma once

namespace ninfer::bench {

// f32 FLOP/s of `threads` threads each running 12 independent `lanes`-wide FMA chains (8: AVX2/FMA, 16: AVX-512F;
// registers only), the best of `reps` runs; 0 where the build or CPU lacks that width.
double fma_peak_flops(int threads, int reps, int lanes = 8);

}  // namespace ninfer::bench
