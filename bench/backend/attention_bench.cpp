// ninfer-bench-attention: the CPU backend's causal paged attention over a prefill of T tokens (one sequence, a bf16 or
// f32 cache, block size 16) and one decode step at that context: ms and GFLOP/s (4·hd FLOPs per query-key pair:
// the score and the weighted sum of V). Shapes default to a Qwen3 0.6B layer: 16 query heads, 8 kv heads, hd 128.
#include <cmath>
#include <random>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/backend/cpu_backend_flags.h"
#include "bench/common/timing.h"
#include "engine/backend/backend.h"
#include "engine/core/half.h"

using namespace ninfer;
using bench::median_seconds;

int main(int argc, char** argv) {
  CLI::App app{"CPU paged attention bench: prefill and decode"};
  bench::CpuBackendFlags cpu;
  int reps = 5;
  int64_t nh = 16, nkv = 8, hd = 128, bs = 16;
  std::vector<int64_t> lengths = {512, 2048};
  std::string cache = "bf16";
  cpu.add_to(app);
  app.add_option("--heads", nh, "query heads");
  app.add_option("--kv-heads", nkv, "kv heads");
  app.add_option("--head-dim", hd, "head dim");
  app.add_option("--tokens", lengths, "prefill lengths");
  app.add_option("--cache", cache, "bf16 | f32");
  app.add_option("--reps", reps, "timed repetitions (median reported)");
  CLI11_PARSE(app, argc, argv);

  const CpuBackendOptions opt = cpu.options();
  auto be = make_cpu_backend(opt);
  const DType dt = cache == "f32" ? DType::kF32 : DType::kBF16;
  fmt::print("backend {}; {} heads / {} kv heads, hd {}, {} cache, block {}; median of {}\n", be->name(), nh, nkv, hd,
             dtype_name(dt), bs, reps);
  fmt::print("{:>6} {:>12} {:>10} {:>12} {:>10}\n", "tokens", "prefill ms", "GFLOP/s", "decode ms", "GFLOP/s");
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> U(-1, 1);
  for (const int64_t T : lengths) {
    const int64_t blocks = (T + bs - 1) / bs, row = nkv * hd;
    std::vector<float> q(static_cast<size_t>(T * nh * hd)), out(q.size());
    for (float& x : q) x = U(rng);
    std::vector<float> kf(static_cast<size_t>(blocks * bs * row)), vf(kf.size());
    for (float& x : kf) x = U(rng);
    for (float& x : vf) x = U(rng);
    std::vector<uint16_t> kh(kf.size()), vh(vf.size());
    for (size_t i = 0; i < kf.size(); ++i) kh[i] = f32_to_bf16(kf[i]), vh[i] = f32_to_bf16(vf[i]);
    void* kp = dt == DType::kF32 ? static_cast<void*>(kf.data()) : kh.data();
    void* vp = dt == DType::kF32 ? static_cast<void*>(vf.data()) : vh.data();
    const KvLayer layer{Tensor::make(kp, dt, {blocks, bs, nkv, hd}), Tensor::make(vp, dt, {blocks, bs, nkv, hd}), {}, {}};
    std::vector<int32_t> table(static_cast<size_t>(blocks));
    for (int64_t b = 0; b < blocks; ++b) table[static_cast<size_t>(b)] = static_cast<int32_t>(b);
    const std::vector<int32_t> q_start{0, static_cast<int32_t>(T)}, seq_len{static_cast<int32_t>(T)};
    const PagedKv prefill{q_start, seq_len, table, static_cast<int32_t>(blocks)};
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const double tp = median_seconds(reps, [&] {
      be->attention(Tensor::make(out.data(), DType::kF32, {T, nh, hd}), Tensor::make(q.data(), DType::kF32, {T, nh, hd}),
                    layer, prefill, scale);
    });
    const std::vector<int32_t> q1{0, 1};
    const PagedKv decode{q1, seq_len, table, static_cast<int32_t>(blocks)};
    const double td = median_seconds(reps * 20, [&] {
      be->attention(Tensor::make(out.data(), DType::kF32, {1, nh, hd}), Tensor::make(q.data(), DType::kF32, {1, nh, hd}),
                    layer, decode, scale);
    });
    const double pairs = double(T) * double(T + 1) / 2 * double(nh);
    fmt::print("{:>6} {:>12.3f} {:>10.1f} {:>12.4f} {:>10.1f}\n", T, tp * 1e3, 4 * double(hd) * pairs / tp / 1e9,
               td * 1e3, 4 * double(hd) * double(T) * double(nh) / td / 1e9);
  }
}
