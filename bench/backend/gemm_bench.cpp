// ninfer-bench-backend: linear (y = x·Wᵀ) throughput of the CPU backend, in weight GB/s and GFLOP/s, next to the memory
// bandwidth of the same machine measured with the same threads (memcpy and a read-only sweep) and its measured FMA
// peak; bf16/f16/f32 and nvfp4 (W4A4 and W4A16) weights; optionally against the legacy GEMM paths in the same run.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/common/bandwidth.h"
#include "bench/backend/cpu_backend_flags.h"
#include "bench/common/fma_peak.h"
#include "bench/common/timing.h"
#include "engine/backend/backend.h"
#include "engine/core/half.h"
#include "engine/quant/nvfp4.h"

using namespace ninfer;

using bench::median_seconds;

int main(int argc, char** argv) {
  CLI::App app{"CPU backend gemm bench: weight-streaming GB/s vs memory bandwidth"};
  bench::CpuBackendFlags cpu;
  int reps = 7;
  int64_t N = 16384, K = 4096;
  cpu.add_to(app, "backend threads (and memcpy threads)");
  app.add_option("--n", N, "weight rows (output features)");
  app.add_option("--k", K, "weight columns (input features)");
  app.add_option("--reps", reps, "timed repetitions (median reported)");
  std::string only = "all";
  app.add_option("--only", only, "all | dense (bf16/f16/f32) | nvfp4 | bf16 | w4a4: which weight kinds to time");
  std::vector<int64_t> ms = {1, 2, 4, 8, 32};
  app.add_option("--m", ms, "activation row counts");
  std::string variant = "now";
  app.add_option("--variant", variant,
                 "now | legacy (CpuBackendOptions::legacy_gemm: the GEMM paths before issue 23) | both (interleaved, "
                 "with the speedup)");
  bool kernels_only = false;
  app.add_flag("--kernels-only", kernels_only,
               "skip the bandwidth and FMA peak probes (for CPU-time counts, perf stat -e task-clock, of the GEMMs)");
  bool bf16_activations = false;
  app.add_flag("--bf16-activations", bf16_activations,
               "bf16 weights with activations rounded to bf16 (CpuBackendOptions::bf16_activations, "
               "ninfer-serve --dense-activations bf16); with --variant both, timed against f32 activations");
  CLI11_PARSE(app, argc, argv);

  CpuBackendOptions opt = cpu.options();
  opt.bf16_activations = bf16_activations;
  auto be = make_cpu_backend(opt);

  const size_t bw_bytes = 512ull << 20;
  const double copy_bw = kernels_only ? 0.0 : bench::memcpy_bandwidth(bw_bytes, cpu.threads, reps);
  const double read_bw = kernels_only ? 0.0 : bench::read_bandwidth(bw_bytes, cpu.threads, reps);
  fmt::print("backend {}\nweights [{} x {}] ({:.0f} MiB in bf16; the default exceeds the last-level cache), median of {}\n",
             be->name(), N, K, double(N) * double(K) * 2.0 / double(1 << 20), reps);
  fmt::print("memcpy bandwidth ({} threads): {:.2f} GB/s (bytes copied / s)\n", cpu.threads, copy_bw / 1e9);
  fmt::print("read-only sweep  ({} threads): {:.2f} GB/s\n", cpu.threads, read_bw / 1e9);
  // The compute roofline of %peak: the widest f32 FMA the CPU has (16-wide where AVX-512 is present: the dense and
  // nvfp4 kernels of the auto tables are 512-bit there).
  const double peak8 = kernels_only ? 0.0 : bench::fma_peak_flops(cpu.threads, reps, 8);
  const double peak16 = kernels_only ? 0.0 : bench::fma_peak_flops(cpu.threads, reps, 16);
  const double peak = std::max(peak8, peak16);
  if (peak8 > 0) fmt::print("FMA peak ({} threads, 12 independent 8-wide f32 FMA chains each): {:.1f} GFLOP/s\n", cpu.threads, peak8 / 1e9);
  if (peak16 > 0) fmt::print("FMA peak ({} threads, 12 independent 16-wide f32 FMA chains each): {:.1f} GFLOP/s (%peak is against this)\n", cpu.threads, peak16 / 1e9);
  fmt::print("\n");

  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> wf(static_cast<size_t>(N * K));
  for (auto& v : wf) v = dist(rng);
  auto pct = [](double v, double of) { return of > 0 ? fmt::format("{:.0f}%", 100.0 * v / of) : std::string("-"); };
  // One row of the table: this backend (and, with --variant both, the legacy GEMM paths, timed interleaved with it).
  auto time_row = [&](std::string_view label, const Tensor& w, double wbytes, Nvfp4Activations mode, int64_t M) {
    std::vector<float> x(static_cast<size_t>(M * K)), y(static_cast<size_t>(M * N));
    for (auto& v : x) v = dist(rng);
    const Tensor xt = Tensor::make(x.data(), DType::kF32, {M, K}), yt = Tensor::make(y.data(), DType::kF32, {M, N});
    const double flop = 2.0 * double(M) * double(N) * double(K);
    CpuBackendOptions o = opt;
    o.nvfp4_activations = mode;
    o.legacy_gemm = variant == "legacy";
    auto be_now = make_cpu_backend(o);
    if (variant != "both") {
      const double t = median_seconds(reps, [&] { be_now->linear(yt, xt, w); });
      fmt::print("{:<6} {:>4} {:>10.3f} {:>10.2f} {:>12} {:>12} {:>10.1f} {:>7}\n", label, M, t * 1e3, wbytes / t / 1e9,
                 pct(wbytes / t, copy_bw), pct(wbytes / t, read_bw), flop / t / 1e9, pct(flop / t, peak));
      return;
    }
    if (bf16_activations) o.bf16_activations = false;  // "legacy" = f32 activations, the same GEMM paths
    else o.legacy_gemm = true;
    auto be_old = make_cpu_backend(o);
    const auto [t_old, t_new] = bench::median_seconds_pair(
        reps, [&] { be_old->linear(yt, xt, w); }, [&] { be_now->linear(yt, xt, w); });
    fmt::print("{:<6} {:>4} {:>10.3f} {:>10.3f} {:>10.1f} {:>10.1f} {:>8.2f}x {:>7}\n", label, M, t_old * 1e3,
               t_new * 1e3, flop / t_old / 1e9, flop / t_new / 1e9, t_old / t_new, pct(flop / t_new, peak));
  };
  if (variant == "both")
    fmt::print("{:<6} {:>4} {:>10} {:>10} {:>10} {:>10} {:>9} {:>7}\n", "dtype", "M", "ms legacy", "ms now",
               "GFLOP/s l", "GFLOP/s n", "speedup", "%peak");
  else
    fmt::print("{:<6} {:>4} {:>10} {:>10} {:>12} {:>12} {:>10} {:>7}\n", "dtype", "M", "ms", "GB/s", "vs memcpy",
               "vs read", "GFLOP/s", "%peak");
  const bool dense = only == "all" || only == "dense" || only == "bf16", nvfp4 = only == "all" || only == "nvfp4" || only == "w4a4";
  std::vector<DType> dense_types = {DType::kBF16, DType::kF16, DType::kF32};
  if (!dense) dense_types.clear();
  if (only == "bf16") dense_types = {DType::kBF16};
  for (DType dt : dense_types) {
    std::vector<uint16_t> wh;
    void* wp = wf.data();
    if (dt != DType::kF32) {
      wh.resize(wf.size());
      for (size_t i = 0; i < wf.size(); ++i) wh[i] = dt == DType::kBF16 ? f32_to_bf16(wf[i]) : f32_to_f16(wf[i]);
      wp = wh.data();
    }
    const Tensor w = Tensor::make(wp, dt, {N, K});
    const double wbytes = double(N) * double(K) * double(dtype_element_bytes(dt));
    for (int64_t M : ms) time_row(dtype_name(dt), w, wbytes, opt.nvfp4_activations, M);
  }
  // nvfp4: the same weights packed (4.5 bits per weight), W4A4 and W4A16 backends; ms next to bf16's
  if (nvfp4) {
    const std::array<int64_t, 2> shape = {N, K};
    std::vector<std::byte> packed(nvfp4_layout(shape)->total_bytes);
    quantize_nvfp4(wf.data(), static_cast<uint64_t>(N), static_cast<uint64_t>(K), packed);
    const Tensor w = Tensor::make(packed.data(), DType::kNVFP4, {N, K});
    const double wbytes = static_cast<double>(packed.size());
    std::vector<Nvfp4Activations> modes = {Nvfp4Activations::kNvfp4, Nvfp4Activations::kFloat};
    if (only == "w4a4") modes.pop_back();
    for (Nvfp4Activations mode : modes)
      for (int64_t M : ms) time_row(mode == Nvfp4Activations::kNvfp4 ? "w4a4" : "w4a16", w, wbytes, mode, M);
    fmt::print("(nvfp4 GB/s counts the packed bytes: codes + E4M3 scales; backend {})\n",
               make_cpu_backend(opt)->name());
  }
  // per-op dispatch cost: many small linears (decode-sized ops) at this thread count
  {
    const int64_t n = 512, k = 1024, calls = 2000;
    std::vector<uint16_t> ws(static_cast<size_t>(n * k), f32_to_bf16(0.5f));
    std::vector<float> x(static_cast<size_t>(k), 1.0f), y(static_cast<size_t>(n));
    const Tensor w = Tensor::make(ws.data(), DType::kBF16, {n, k});
    const Tensor xt = Tensor::make(x.data(), DType::kF32, {1, k}), yt = Tensor::make(y.data(), DType::kF32, {1, n});
    const double t = median_seconds(3, [&] {
      for (int64_t i = 0; i < calls; ++i) be->linear(yt, xt, w);
    });
    fmt::print("\nsmall op: bf16 [{} x {}] linear, M=1, {} calls: {:.1f} us per call\n", n, k, calls, t / double(calls) * 1e6);
  }
  return 0;
}
