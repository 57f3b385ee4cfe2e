// Row-wise and elementwise ops of the CPU backend: norms, activations, gating,
// residual add, RoPE.
#include <cmath>

#include "engine/backend/checks/elementwise_checks.h"
#include "engine/backend/checks/gdn_checks.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/core/error.h"

namespace ninfer::cpu {

namespace {

// Runs fn(row_begin, row_end, thread) over `rows` rows, threaded when the op is
// large enough to pay for it.
template <typename Fn>
void for_rows(ThreadPool &pool, int64_t rows, int64_t row_size, Fn &&fn) {
  const int64_t work = rows * row_size;
  if (pool.size() == 1 || work < (1 << 15) || rows < 2) {
    fn(int64_t{0}, rows, 0);
    return;
  }
  const int64_t tasks = std::min<int64_t>(rows, pool.size() * 4);
  const int64_t per = (rows + tasks - 1) / tasks;
  pool.parallel_for((rows + per - 1) / per, [&](int64_t t, int thread) {
    fn(t * per, std::min(rows, (t + 1) * per), thread);
  });
}

// Σx² over a row, accumulated in double.
inline double sum_squares(const float *x, int64_t n) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i)
    ss += double(x[i]) * x[i];
  return ss;
}
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// Weight vector [N] as f32: a view when already f32, else converted into `buf`.
const float *weight_f32(const Kernels &k, const Tensor &w,
                        std::vector<float> &buf) {
  if (w.dtype == DType::kF32)
    return static_cast<const float *>(w.data);
  buf.resize(static_cast<size_t>(w.numel()));
  k.to_f32(w.data, w.dtype, buf.data(), w.numel());
  return buf.data();
}

} // namespace

namespace {

// One row of rms_norm (y may be x).
inline void rms_norm_row(const float *xr, float *yr, const float *wf, int64_t N,
                         float eps, float w_offset) {
  const float inv = static_cast<float>(
      1.0 / std::sqrt(sum_squares(xr, N) / double(N) + double(eps)));
  for (int64_t i = 0; i < N; ++i)
    yr[i] = xr[i] * inv * (wf[i] + w_offset);
}

} // namespace

void CpuBackend::rms_norm(const Tensor &y, const Tensor &x, const Tensor &w,
                          float eps, float w_offset) {
  check_rms_norm(y, x, w, Device::kCpu);
  const int64_t N = x.row_size();
  std::vector<float> buf;
  const float *wf = weight_f32(*k_, w, buf);
  for_rows(pool_, x.rows(), N, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r)
      rms_norm_row(row_f32(x, r), row_f32(y, r), wf, N, eps, w_offset);
  });
}

void CpuBackend::add_rms_norm(const Tensor &x, const Tensor &y,
                              const Tensor &delta, const Tensor &w, float eps,
                              float w_offset) {
  check_add_rms_norm(x, y, delta, w, Device::kCpu);
  const int64_t N = x.row_size();
  std::vector<float> buf;
  const float *wf = weight_f32(*k_, w, buf);
  // Row by row, so the sum is still in L1 when the norm reads it back.
  for_rows(pool_, x.rows(), N, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      float *xr = row_f32(x, r);
      const float *dr = row_f32(delta, r);
      for (int64_t i = 0; i < N; ++i)
        xr[i] = xr[i] + dr[i];
      rms_norm_row(xr, row_f32(y, r), wf, N, eps, w_offset);
    }
  });
}

void CpuBackend::gated_rms_norm(const Tensor &y, const Tensor &x,
                                const Tensor &z, const Tensor &w, float eps) {
  check_gated_rms_norm(y, x, z, w, Device::kCpu);
  const int64_t N = x.row_size();
  std::vector<float> buf;
  const float *wf = weight_f32(*k_, w, buf);
  for_rows(pool_, x.rows(), N, [&](int64_t r0, int64_t r1, int) {
    thread_local std::vector<float>
        gate; // silu(z) of one row: y may be x (the model normalizes in place)
    gate.resize(static_cast<size_t>(N));
    for (int64_t r = r0; r < r1; ++r) {
      const float *xr = row_f32(x, r);
      const float *zr = row_f32(z, r);
      float *yr = row_f32(y, r);
      const float inv = static_cast<float>(
          1.0 / std::sqrt(sum_squares(xr, N) / double(N) + double(eps)));
      k_->silu_mul(zr, nullptr, gate.data(), N);
      for (int64_t i = 0; i < N; ++i)
        yr[i] = wf[i] * (xr[i] * inv) * gate[i];
    }
  });
}

void CpuBackend::l2_norm(const Tensor &y, const Tensor &x, float eps,
                         float scale) {
  check_l2_norm(y, x, Device::kCpu);
  const int64_t N = x.row_size();
  for_rows(pool_, x.rows(), N, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const float *xr = row_f32(x, r);
      float *yr = row_f32(y, r);
      const float inv = static_cast<float>(
          double(scale) / std::sqrt(sum_squares(xr, N) + double(eps)));
      for (int64_t i = 0; i < N; ++i)
        yr[i] = xr[i] * inv;
    }
  });
}

namespace {

template <typename Op>
void binary(CpuBackend &be, const char *op, const Tensor &y, const Tensor &a,
            const Tensor &b, Op f) {
  check_binary(op, y, a, b, Device::kCpu);
  const int64_t N = a.row_size();
  for_rows(be.pool(), a.rows(), N, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const float *ar = row_f32(a, r);
      const float *br = row_f32(b, r);
      float *yr = row_f32(y, r);
      for (int64_t i = 0; i < N; ++i)
        yr[i] = f(ar[i], br[i]);
    }
  });
}

} // namespace

void CpuBackend::add(const Tensor &y, const Tensor &a, const Tensor &b) {
  binary(*this, "add", y, a, b, [](float p, float q) { return p + q; });
}

void CpuBackend::silu_mul(const Tensor &y, const Tensor &gate,
                          const Tensor &up) {
  check_binary("silu_mul", y, gate, up, Device::kCpu);
  const int64_t N = gate.row_size();
  for_rows(pool_, gate.rows(), N, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r)
      k_->silu_mul(row_f32(gate, r), row_f32(up, r), row_f32(y, r), N);
  });
}

void CpuBackend::sigmoid_mul(const Tensor &y, const Tensor &x,
                             const Tensor &gate) {
  binary(*this, "sigmoid_mul", y, x, gate,
         [](float v, float g) { return v * sigmoid(g); });
}

void CpuBackend::gdn_gating(const Tensor &g, const Tensor &beta,
                            const Tensor &a, const Tensor &b,
                            const Tensor &A_log, const Tensor &dt_bias) {
  check_gdn_gating(g, beta, a, b, A_log, dt_bias, Device::kCpu);
  const int64_t nv = a.dim(1);
  std::vector<float> b1, b2;
  const float *al = weight_f32(*k_, A_log, b1);
  const float *dt = weight_f32(*k_, dt_bias, b2);
  for (int64_t t = 0; t < a.dim(0); ++t) {
    const float *ar = row_f32(a, t);
    const float *br = row_f32(b, t);
    float *gr = row_f32(g, t);
    float *betar = row_f32(beta, t);
    for (int64_t h = 0; h < nv; ++h) {
      const float xa = ar[h] + dt[h];
      const float sp = xa > 20.0f ? xa : std::log1p(std::exp(xa));
      gr[h] = -std::exp(al[h]) * sp;
      betar[h] = sigmoid(br[h]);
    }
  }
}

void CpuBackend::rope(const Tensor &x, std::span<const int32_t> positions,
                      int64_t rotary_dim, double theta) {
  check_rope(x, positions, rotary_dim, Device::kCpu);
  const int64_t T = x.dim(0), H = x.dim(1), D = x.dim(2);
  const int64_t half = rotary_dim / 2;
  // As transformers (and so the checkpoints' training) computes it: inv_freq
  // rounded to f32, the angle position · inv_freq rounded to f32, then cos/sin
  // of that angle.
  std::vector<float> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    inv[static_cast<size_t>(i)] = static_cast<float>(
        1.0 / std::pow(theta, double(2 * i) / double(rotary_dim)));
  for_rows(pool_, T, H * D, [&](int64_t t0, int64_t t1, int thread) {
    float *cs = scratch(thread, static_cast<size_t>(2 * half));
    for (int64_t t = t0; t < t1; ++t) {
      for (int64_t i = 0; i < half; ++i) {
        const float ang =
            static_cast<float>(positions[static_cast<size_t>(t)]) *
            inv[static_cast<size_t>(i)];
        cs[i] = static_cast<float>(std::cos(double(ang)));
        cs[half + i] = static_cast<float>(std::sin(double(ang)));
      }
      for (int64_t h = 0; h < H; ++h) {
        float *v = static_cast<float *>(x.at(t, h));
        for (int64_t i = 0; i < half; ++i) {
          const float a = v[i], b = v[i + half];
          v[i] = a * cs[i] - b * cs[half + i];
          v[i + half] = b * cs[i] + a * cs[half + i];
        }
      }
    }
  });
}

} // namespace ninfer::cpu
