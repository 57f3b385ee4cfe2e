#include "bench/common/fma_peak.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "engine/backend/backend.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define NINFER_FMA_PEAK_PROBE 1
#endif

namespace ninfer::bench {

#if NINFER_FMA_PEAK_PROBE

namespace {

constexpr int kChains = 12;  // > FMA latency (4-5 cycles) x 2 pipes: the loop is throughput-bound

// kChains accumulators, `iters` rounds of one FMA each; returns a value that depends on all of them.
__attribute__((target("avx2,fma"))) float fma_chains8(int64_t iters) {
  __m256 a[kChains];
  for (int i = 0; i < kChains; ++i) a[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < kChains; ++i) a[i] = _mm256_fmadd_ps(a[i], m, c);
  __m256 s = a[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_ps(s, a[i]);
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  return out[0] + out[7];
}

__attribute__((target("avx512f"))) float fma_chains16(int64_t iters) {
  __m512 a[kChains];
  for (int i = 0; i < kChains; ++i) a[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < kChains; ++i) a[i] = _mm512_fmadd_ps(a[i], m, c);
  __m512 s = a[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, a[i]);
  alignas(64) float out[16];
  _mm512_store_ps(out, s);
  return out[0] + out[15];
}

}  // namespace

double fma_peak_flops(int threads, int reps, int lanes) {
  if (lanes == 16 ? !__builtin_cpu_supports("avx512f") : !cpu_has_avx2_fma()) return 0.0;
  const int64_t iters = 20'000'000;  // 240 M FMAs per thread: ~40 ms at 3 GHz
  double best = 0.0;
  for (int r = 0; r < std::max(1, reps); ++r) {
    std::vector<std::thread> pool;
    std::vector<float> sink(static_cast<size_t>(threads));
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { sink[static_cast<size_t>(t)] = lanes == 16 ? fma_chains16(iters) : fma_chains8(iters); });
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, double(threads) * double(iters) * kChains * 2.0 * lanes / s);
  }
  return best;
}

#else

double fma_peak_flops(int, int, int) { return 0.0; }

#endif

}  // namespace ninfer::bench
