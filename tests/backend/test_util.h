// Owns the backend tests' helpers: host tensors of any dtype, random fill, error metrics, the backend configs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/kernels.h"
#include "engine/core/error.h"
#include "engine/core/half.h"

namespace ninfer::testing {

// Owned host storage plus a Tensor view of it. `values` keeps the exact f32 value of every element (for
// bf16/f16 the value after rounding), which the scalar references consume.
struct HostTensor {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<float> values;
  std::vector<uint16_t> bits;  // bf16/f16 storage

  HostTensor() = default;
  HostTensor(std::vector<int64_t> s, DType dt = DType::kF32) : dtype(dt), shape(std::move(s)) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    values.assign(static_cast<size_t>(n), 0.0f);
    if (dt != DType::kF32) bits.assign(static_cast<size_t>(n), 0);
  }
  int64_t numel() const { return static_cast<int64_t>(values.size()); }
  // Rounds `values` to the dtype and stores the bits (no-op for f32).
  void sync() {
    for (size_t i = 0; i < values.size(); ++i) {
      if (dtype == DType::kBF16) {
        bits[i] = f32_to_bf16(values[i]);
        values[i] = bf16_to_f32(bits[i]);
      } else if (dtype == DType::kF16) {
        bits[i] = f32_to_f16(values[i]);
        values[i] = f16_to_f32(bits[i]);
      }
    }
  }
  void* data() { return dtype == DType::kF32 ? static_cast<void*>(values.data()) : static_cast<void*>(bits.data()); }
  Tensor view() {
    Tensor t;
    t.data = data();
    t.dtype = dtype;
    t.ndim = static_cast<int>(shape.size());
    int64_t s = 1;
    for (int d = t.ndim - 1; d >= 0; --d) {
      t.shape[static_cast<size_t>(d)] = shape[static_cast<size_t>(d)];
      t.stride[static_cast<size_t>(d)] = s;
      s *= shape[static_cast<size_t>(d)];
    }
    return t;
  }
  // Reads back a bf16/f16 tensor written by a backend (e.g. a KV cache) into `values`.
  void unsync() {
    for (size_t i = 0; i < values.size() && dtype != DType::kF32; ++i)
      values[i] = dtype == DType::kBF16 ? bf16_to_f32(bits[i]) : f16_to_f32(bits[i]);
  }
};

inline HostTensor random_tensor(std::vector<int64_t> shape, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f,
                                DType dtype = DType::kF32) {
  HostTensor t(std::move(shape), dtype);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (auto& v : t.values) v = dist(rng);
  t.sync();
  return t;
}

// max |a − b| / max |b| (b = reference); 0 when both are all zero.
// Equal bits (any NaN equals any NaN).
inline bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

// y of linear(x, w) on a CPU backend made with `o`: x [M, K] read with row stride K + 5, y [M, N] with row stride
// N + 3, accumulated onto 0.5 (so the strided and accumulating paths run too).
inline std::vector<float> run_strided_linear(const CpuBackendOptions& o, const std::vector<float>& x, const Tensor& w,
                                             int64_t M) {
  const int64_t N = w.dim(0), K = w.dim(1);
  auto be = make_cpu_backend(o);
  std::vector<float> y(static_cast<size_t>(M * (N + 3)), 0.5f);
  be->linear(Tensor::strided(y.data(), DType::kF32, {M, N}, {N + 3, 1}),
             Tensor::strided(const_cast<float*>(x.data()), DType::kF32, {M, K}, {K + 5, 1}), w, true);
  return y;
}

inline double rel_err(const float* a, const double* b, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; ++i) {
    num = std::max(num, std::abs(double(a[i]) - b[i]));
    den = std::max(den, std::abs(b[i]));
  }
  return den == 0.0 ? num : num / den;
}
inline double rel_err(const std::vector<float>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  return rel_err(a.data(), b.data(), std::min(a.size(), b.size()));
}
inline double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<double> bd(b.begin(), b.end());
  return rel_err(a, bd);
}
inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0.0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(double(a[i]) - double(b[i])));
  return a.size() == b.size() ? m : INFINITY;
}

struct BackendConfig {
  std::string label;
  CpuBackendOptions options;
};
inline void PrintTo(const BackendConfig& c, std::ostream* os) { *os << c.label; }

// scalar, AVX2 and the AVX-512 dense kernels (each when the CPU has it), single- and multi-threaded.
inline std::vector<BackendConfig> backend_configs() {
  std::vector<BackendConfig> c{{"scalar_1t", {1, CpuSimd::kScalar}}, {"scalar_3t", {3, CpuSimd::kScalar}}};
  if (cpu_has_avx2_fma()) {
    c.push_back({"avx2_1t", {1, CpuSimd::kAvx2}});
    c.push_back({"avx2_3t", {3, CpuSimd::kAvx2}});
  }
  if (cpu::avx512_kernels()) {  // what kAuto picks there
    c.push_back({"avx512_1t", {1, CpuSimd::kAuto}});
    c.push_back({"avx512_3t", {3, CpuSimd::kAuto}});
  }
  return c;
}

}  // namespace ninfer::testing
