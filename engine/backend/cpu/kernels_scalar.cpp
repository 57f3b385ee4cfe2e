#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/backend/cpu/kernels.h"
#include "engine/core/error.h"
#include "engine/core/half.h"

namespace ninfer::cpu {

namespace {

struct LoadF32 {
  static float get(const void* w, int64_t i) { return static_cast<const float*>(w)[i]; }
};
struct LoadBf16 {
  static float get(const void* w, int64_t i) { return bf16_to_f32(static_cast<const uint16_t*>(w)[i]); }
};
struct LoadF16 {
  static float get(const void* w, int64_t i) { return f16_to_f32(static_cast<const uint16_t*>(w)[i]); }
};

template <typename Load>
void gemm_scalar(const float* x, int64_t xs, int rows, const float* /*packed*/, const void* w, int64_t ws, int64_t n0,
                 int64_t n1, int64_t K, float* y, int64_t ys, bool acc) {
  for (int64_t n = n0; n < n1; ++n) {
    float sum[kGemmMaxRows] = {};
    for (int64_t k = 0; k < K; ++k) {
      const float wv = Load::get(w, n * ws + k);
      for (int m = 0; m < rows; ++m) sum[m] += x[m * xs + k] * wv;
    }
    for (int m = 0; m < rows; ++m) y[m * ys + n] = acc ? y[m * ys + n] + sum[m] : sum[m];
  }
}

float dot_scalar(const float* a, const float* b, int64_t n) {
  float s = 0.f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void axpy_scalar(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void scale_scalar(float a, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= a;
}

void stream_copy_scalar(float* dst, const float* src, int64_t n) { std::copy(src, src + n, dst); }

void delta_step_scalar(float* S, int64_t dk, int64_t dv, const float* k, const float* q, const float* v, float decay,
                       float beta, float* o, float* tmp) {
  float *sk = tmp, *sq = tmp + dv;
  std::fill(tmp, tmp + 2 * dv, 0.0f);
  float kq = 0.0f;
  for (int64_t i = 0; i < dk; ++i) {
    const float* s = S + i * dv;
    for (int64_t j = 0; j < dv; ++j) sk[j] += k[i] * s[j], sq[j] += q[i] * s[j];
    kq += k[i] * q[i];
  }
  for (int64_t j = 0; j < dv; ++j) {
    const float u = beta * (v[j] - decay * sk[j]);
    o[j] = decay * sq[j] + kq * u;
    sk[j] = u;
  }
  for (int64_t i = 0; i < dk; ++i) {
    float* s = S + i * dv;
    for (int64_t j = 0; j < dv; ++j) s[j] = decay * s[j] + k[i] * sk[j];
  }
}

void to_f32_scalar(const void* src, DType dtype, float* dst, int64_t n) {
  switch (dtype) {
    case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case DType::kBF16: bf16_to_f32(static_cast<const uint16_t*>(src), dst, static_cast<size_t>(n)); return;
    case DType::kF16: f16_to_f32(static_cast<const uint16_t*>(src), dst, static_cast<size_t>(n)); return;
    default: fail(ErrorKind::kUnsupported, "to_f32: dtype {} is not f32/bf16/f16", dtype_name(dtype));
  }
}

void from_f32_scalar(const float* src, DType dtype, void* dst, int64_t n) {
  switch (dtype) {
    case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case DType::kBF16: f32_to_bf16(src, static_cast<uint16_t*>(dst), static_cast<size_t>(n)); return;
    case DType::kF16: f32_to_f16(src, static_cast<uint16_t*>(dst), static_cast<size_t>(n)); return;
    default: fail(ErrorKind::kUnsupported, "from_f32: dtype {} is not f32/bf16/f16", dtype_name(dtype));
  }
}

void transpose_to_f32_scalar(const void* src, DType dtype, int64_t ss, int64_t rows, int64_t cols, float* dst,
                             int64_t ds) {
  for (int64_t r = 0; r < rows; ++r) {
    const auto* s = static_cast<const char*>(src) + r * ss * static_cast<int64_t>(dtype_element_bytes(dtype));
    for (int64_t c = 0; c < cols; ++c) {
      float v = 0;
      to_f32_scalar(s + c * static_cast<int64_t>(dtype_element_bytes(dtype)), dtype, &v, 1);
      dst[c * ds + r] = v;
    }
  }
}

void gemm_nn_scalar(const float* a, int64_t as, const float* b, int64_t bs, float* c, int64_t cs, int64_t M, int64_t N,
                    int64_t K, bool acc) {
  for (int64_t m = 0; m < M; ++m) {
    float* cm = c + m * cs;
    if (!acc) std::fill(cm, cm + N, 0.0f);
    for (int64_t k = 0; k < K; ++k) axpy_scalar(a[m * as + k], b + k * bs, cm, N);
  }
}

float exp_shift_scalar(const float* x, float m, float* p, int64_t n) {
  float l = 0.0f;
  for (int64_t i = 0; i < n; ++i) l += (p[i] = std::exp(x[i] - m));
  return l;
}

void silu_mul_scalar(const float* g, const float* u, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float s = g[i] / (1.0f + std::exp(-g[i]));
    y[i] = u ? s * u[i] : s;
  }
}

}  // namespace

GemmFn Kernels::gemm(DType w) const {
  switch (w) {
    case DType::kF32: return gemm_f32;
    case DType::kBF16: return gemm_bf16;
    case DType::kF16: return gemm_f16;
    default: return nullptr;
  }
}

const Kernels& scalar_kernels() {
  static const Kernels k{"scalar",      gemm_scalar<LoadF32>, gemm_scalar<LoadBf16>, gemm_scalar<LoadF16>, dot_scalar,
                         axpy_scalar,   scale_scalar,         to_f32_scalar,         from_f32_scalar,
                         gemm_nn_scalar, exp_shift_scalar,     nullptr,               silu_mul_scalar,
                         transpose_to_f32_scalar, delta_step_scalar, stream_copy_scalar};
  return k;
}

}  // namespace ninfer::cpu
