// CpuBackend::linear for nvfp4 weights: activation preparation (W4A4 quantization or W4A16 reordering), then the
// packed kernels threaded over weight-row chunks, each chunk swept by every activation-row tile.
#include <algorithm>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/nvfp4_linear.h"
#include "engine/core/error.h"

namespace ninfer::cpu {

void CpuBackend::linear_nvfp4(const Tensor& y, const Tensor& x, const Tensor& w, bool accumulate) {
  // The shared argument rules ran in CpuBackend::linear (check_linear); here the trailer.
  const Nvfp4Weight wv = nvfp4_weight("linear", w);
  const int64_t M = x.rows(), K = x.row_size(), N = wv.N;
  if (M == 0 || N == 0) return;
  const int64_t xs = x.row_stride(), ys = y.row_stride();
  const auto* xp = static_cast<const float*>(x.data);
  auto* yp = static_cast<float*>(y.data);
  const bool a4 = nvfp4_activations_ == Nvfp4Activations::kNvfp4;
  const int threads = pool_.size();
  const bool parallel = M * N * K >= (1 << 16);

  // 1. Activations, once per call (rows split over the threads when there are several).
  const int64_t row_tasks = parallel ? std::min<int64_t>(M, threads) : 1;
  const int64_t rows_per_task = (M + row_tasks - 1) / row_tasks;
  if (a4) {
    nvfp4_size_a4(M, K, nvfp4_a4_);
  } else if (nvfp4_k_) {
    resize_exact(nvfp4_a16_, static_cast<size_t>(M * K));
  }
  auto prepare = [&](int64_t t, int) {
    const int64_t r0 = t * rows_per_task, r1 = std::min(M, r0 + rows_per_task);
    if (a4) (nvfp4_k_ ? nvfp4_k_->prepare_a4 : nvfp4_prepare_a4)(xp, xs, r0, r1, wv.input_scale, nvfp4_a4_);
    else if (nvfp4_k_) nvfp4_prepare_a16(xp, xs, r0, r1, K, nvfp4_a16_.data());
  };
  pool_.run(row_tasks, prepare, row_tasks > 1);

  // 2. Weight rows per task: at least 4 tasks per thread, and at most ~128 KiB of packed weights per task (~10 us
  // of streaming) so that a thread that starts late or is preempted holds back one small piece, not an eighth of
  // the op; with several row tiles, at most ~256 KiB so the chunk stays in L2 while every tile passes over it.
  const int64_t row_bytes = K / 2 + K / 16;
  // A small batch (decode rows, a speculative verification block) is one tile where the kernel takes that many rows:
  // one pass over the weights. More rows go in tiles of kNvfp4MaxRows: 8-row tiles of the AVX-512 kernel gained
  // nothing at M = 8 or 64 (docs/benchmarks.md), they gain 5-15% at M = 5-7.
  const int max_rows = nvfp4_k_ && a4 && M <= nvfp4_k_->w4a4_max_rows ? static_cast<int>(M) : kNvfp4MaxRows;
  const int64_t chunk_bytes = M > max_rows ? (256 << 10) : (128 << 10);
  int64_t nb = (N + threads * 4 - 1) / (threads * 4);
  nb = std::min<int64_t>(nb, std::max<int64_t>(4, chunk_bytes / std::max<int64_t>(1, row_bytes)));
  nb = std::max<int64_t>(4, (nb + 3) / 4 * 4);
  const int64_t tasks = (N + nb - 1) / nb;
  auto run = [&](int64_t t, int) {
    const int64_t n0 = t * nb, n1 = std::min(N, n0 + nb);
    int rows = 0;
    for (int64_t m0 = 0; m0 < M; m0 += rows) {
      // Tiles of max_rows; one more than that goes as two (5 left: 3 + 2), not max_rows + 1 (one row runs the GEMV
      // kernel, which gains nothing from a second pass over the chunk's weights). Each output is the same whichever
      // tile computes it.
      const int64_t left = M - m0;
      rows = static_cast<int>(left == max_rows + 1 ? (left + 1) / 2 : std::min<int64_t>(max_rows, left));
      float* yt = yp + m0 * ys;
      if (nvfp4_k_ && a4) {
        nvfp4_k_->w4a4(wv, nvfp4_a4_, m0, rows, n0, n1, yt, ys, accumulate);
      } else if (nvfp4_k_) {
        nvfp4_k_->w4a16(wv, nvfp4_a16_.data() + m0 * K, rows, n0, n1, yt, ys, accumulate);
      } else {  // scalar reference
        for (int m = 0; m < rows; ++m) {
          for (int64_t n = n0; n < n1; ++n) {
            const float s = a4 ? nvfp4_dot_w4a4_ref(wv, n, nvfp4_a4_.codes(m0 + m), nvfp4_a4_.scales(m0 + m),
                                                    nvfp4_a4_.global(m0 + m))
                               : nvfp4_dot_w4a16_ref(wv, n, xp + (m0 + m) * xs);
            float& out = yt[m * ys + n];
            out = accumulate ? out + s : s;
          }
        }
      }
    }
  };
  pool_.run(tasks, run, parallel);
}

}  // namespace ninfer::cpu
