// CpuBackend::linear for bf16 weights with CpuBackendOptions::bf16_activations: the activation rows rounded to bf16
// once per call, then the AVX512-BF16 kernel threaded over weight-row chunks (each swept by the row tiles, gemm_tasks);
// without AVX512-BF16, the rounded rows widened back to f32 through the f32-activation GEMM (the same products,
// summed by FMA in another order).
#include <algorithm>
#include <cstring>

#include "engine/backend/cpu/bf16_linear.h"
#include "engine/backend/cpu/cpu_backend.h"

namespace ninfer::cpu {

void bf16_size_rows(int64_t M, int64_t K, Bf16Rows& out) {
  out.K = K;
  out.stride = (K + 31) / 32 * 32;
  const size_t need = static_cast<size_t>(M * out.stride);
  if (out.storage.size() < need) resize_exact(out.storage, need);
  if (out.stride > K)
    for (int64_t r = 0; r < M; ++r)
      std::memset(out.storage.data() + r * out.stride + K, 0, static_cast<size_t>(out.stride - K) * 2);
}

void CpuBackend::linear_bf16_activations(const Tensor& y, const Tensor& x, const Tensor& w, bool accumulate) {
  const int64_t M = x.rows(), K = x.row_size(), N = w.dim(0);
  if (M == 0 || N == 0) return;
  const int64_t xs = x.row_stride(), ys = y.row_stride(), ws = w.row_stride();
  const auto* xp = static_cast<const float*>(x.data);
  bf16_size_rows(M, K, bf16_rows_);
  const bool parallel = M * N * K >= (1 << 16);
  // 1. Round the rows (split over the threads when there are several).
  const int64_t row_tasks = parallel ? std::min<int64_t>(M, pool_.size()) : 1;
  const int64_t rows_per_task = (M + row_tasks - 1) / row_tasks;
  auto round_rows = [&](int64_t t, int) {
    for (int64_t r = t * rows_per_task; r < std::min(M, (t + 1) * rows_per_task); ++r)
      k_->from_f32(xp + r * xs, DType::kBF16, bf16_rows_.storage.data() + r * bf16_rows_.stride, K);
  };
  pool_.run(row_tasks, round_rows, row_tasks > 1);

  if (!bf16_dot_) {  // widened back (exactly) for the f32-activation GEMM
    resize_exact(bf16_widened_, static_cast<size_t>(M * K));
    for (int64_t r = 0; r < M; ++r)
      k_->to_f32(bf16_rows_.row(r), DType::kBF16, bf16_widened_.data() + r * K, K);
    linear_dense(y, Tensor::make(bf16_widened_.data(), DType::kF32, {M, K}), w, accumulate);
    return;
  }

  // 2. Tasks: weight-row ranges, each swept by the tiles of its row range (gemm_tasks).
  const GemmTasks g = gemm_tasks(M, N, K * 2, kBf16MaxRows, parallel);
  const auto* wp = static_cast<const uint16_t*>(w.data);
  auto* yp = static_cast<float*>(y.data);
  auto run = [&](int64_t t, int) {
    const GemmTasks::Range r = g.range(t);
    for (int64_t m0 = r.m0; m0 < r.m1; m0 += kBf16MaxRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kBf16MaxRows, M - m0));
      bf16_dot_(bf16_rows_, m0, rows, wp, ws, r.n0, r.n1, yp + m0 * ys, ys, accumulate);
    }
  };
  pool_.run(g.count(), run, parallel);
}

}  // namespace ninfer::cpu
