// Owns the NVFP4 test data shared by the CPU and CUDA linear tests: random and adversarial activation rows, and
// weights packed with the project's quantizer (quantize_nvfp4) together with their dequantized values.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/artifact/dtype.h"
#include "engine/backend/tensor.h"
#include "engine/quant/nvfp4.h"

namespace ninfer::nvfp4_test {

inline std::vector<float> random_values(int64_t n, uint32_t seed, float scale = 1.0f, bool lognormal_rows = false,
                                 int64_t row = 0) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float s = scale;
    if (lognormal_rows && row > 0) s *= std::exp(2.0f * d(rng) * static_cast<float>((i / row) % 3));
    v[static_cast<size_t>(i)] = d(rng) * s;
  }
  return v;
}

struct PackedWeight {
  int64_t N, K;
  std::vector<std::byte> bytes;
  std::vector<float> dequant;  // [N, K]
  Tensor view() {
    return Tensor::make(bytes.data(), DType::kNVFP4, {N, K});
  }
  void set_input_scale(float s) {
    const std::array<int64_t, 2> shape = {N, K};
    std::memcpy(bytes.data() + nvfp4_layout(shape)->tensor_scale_offset + 4, &s, sizeof(float));
  }
};

inline PackedWeight pack(const std::vector<float>& w, int64_t N, int64_t K) {
  const std::array<int64_t, 2> shape = {N, K};
  PackedWeight p{N, K, std::vector<std::byte>(nvfp4_layout(shape)->total_bytes), std::vector<float>(w.size())};
  quantize_nvfp4(w.data(), static_cast<uint64_t>(N), static_cast<uint64_t>(K), p.bytes);
  dequantize_nvfp4(p.bytes, static_cast<uint64_t>(N), static_cast<uint64_t>(K), p.dequant.data());
  return p;
}

// Activation rows that exercise the quantizer: normal values, a zero block, a tiny block, an outlier, ties.
inline std::vector<float> activation_rows(int64_t M, int64_t K, uint32_t seed) {
  auto x = random_values(M * K, seed, 1.0f, true, K);
  for (int64_t m = 0; m < M; ++m) {
    float* r = x.data() + m * K;
    if (K >= 32 && m % 2 == 1)
      for (int i = 0; i < 16; ++i) r[16 + i] = 0.0f;  // zero block
    if (K >= 48 && m % 3 == 2)
      for (int i = 0; i < 16; ++i) r[32 + i] *= 1e-6f;  // a block far below the row's amax
    if (m % 4 == 3) r[K - 1] = 300.0f;                  // outlier
  }
  return x;
}

// Rows meant to break a vectorised quantizer: exact e2m1 ties (with input_scale 0.5 every quotient below is exact),
// zero / negative-zero / constant rows, outliers that push the other blocks to the smallest scale, denormal rows
// (g and the block denominators underflow, quotients turn Inf or 0/0), and non-finite rows.
inline std::vector<std::vector<float>> adversarial_rows(int64_t K, uint32_t seed) {
  const float ties[16] = {6.0f, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f,
                          -0.25f, -0.75f, -1.25f, -1.75f, -2.5f, -3.5f, -5.0f, -0.0f};
  std::vector<std::vector<float>> rows;
  auto add = [&](auto f) {
    std::vector<float> r(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k) r[static_cast<size_t>(k)] = f(k);
    rows.push_back(r);
  };
  const auto rnd = random_values(K, seed, 1.0f, true, 16);
  add([&](int64_t k) { return rnd[static_cast<size_t>(k)]; });
  add([&](int64_t k) { return ties[k % 16]; });
  add([&](int64_t k) { return ties[(k * 7) % 16] * 0.5f; });
  add([](int64_t) { return 0.0f; });
  add([](int64_t) { return -0.0f; });
  add([](int64_t) { return 1.0f; });
  add([](int64_t) { return -3.7f; });
  add([&](int64_t k) { return k == K / 2 ? 3.0e38f : rnd[static_cast<size_t>(k)]; });
  add([&](int64_t k) { return k % 16 == 3 ? -1.0e30f : rnd[static_cast<size_t>(k)] * 1e-3f; });
  add([&](int64_t k) { return rnd[static_cast<size_t>(k)] * 1e-41f; });  // denormal inputs
  add([&](int64_t k) { return k % 5 == 0 ? 1e-45f : 0.0f; });           // amax / 2688 rounds to 0
  // g = 1.9e-43: blocks holding one denorm_min clamp to scale 2^-9, their denominator 2^-9 · g rounds to 0, so
  // their zeros quantize from 0/0 = NaN (code 7) and the denorm_min from Inf
  add([&](int64_t k) { return k == 0 ? 5e-40f : k % 16 == 5 ? std::numeric_limits<float>::denorm_min() : 0.0f; });
  add([&](int64_t k) { return k % 32 < 16 ? rnd[static_cast<size_t>(k)] * 1e4f : rnd[static_cast<size_t>(k)] * 1e-38f; });
  add([&](int64_t k) { return k == 1 ? std::numeric_limits<float>::quiet_NaN() : rnd[static_cast<size_t>(k)]; });
  add([&](int64_t k) { return k == K - 1 ? std::numeric_limits<float>::infinity() : 0.0f; });
  add([&](int64_t k) { return k == 0 ? -std::numeric_limits<float>::infinity() : rnd[static_cast<size_t>(k)]; });
  return rows;
}

}  // namespace ninfer::nvfp4_test
