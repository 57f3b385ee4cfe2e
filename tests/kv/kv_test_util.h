// Owns the KV tests' helpers: a backend-allocated KV layer of any cache dtype and the independent int8 quantizer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/backend/backend.h"

namespace ninfer::testing {

// One KV layer [blocks, block_size, n_kv, head_dim] (+ f32 [blocks, block_size, n_kv] scales for i8) in backend memory.
struct OwnedKvLayer {
  std::vector<Buffer> buffers;
  KvLayer layer;
  int64_t blocks = 0, block_size = 0, nkv = 0, hd = 0;

  OwnedKvLayer(Backend& be, DType dtype, int64_t nb, int64_t bs, int64_t n_kv, int64_t head_dim)
      : blocks(nb), block_size(bs), nkv(n_kv), hd(head_dim) {
    const size_t n = static_cast<size_t>(nb * bs * n_kv * head_dim);
    for (Tensor* t : {&layer.k, &layer.v}) {
      buffers.push_back(be.alloc(n * dtype_element_bytes(dtype)));
      *t = Tensor::make(buffers.back().data(), dtype, {nb, bs, n_kv, head_dim});
    }
    if (dtype == DType::kI8)
      for (Tensor* t : {&layer.k_scale, &layer.v_scale}) {
        buffers.push_back(be.alloc(static_cast<size_t>(nb * bs * n_kv) * sizeof(float)));
        *t = Tensor::make(buffers.back().data(), DType::kF32, {nb, bs, n_kv});
      }
  }
  // The value the cache holds for (slot, head, d) of K (which = 0) or V (which = 1), as f32 (i8: code · scale).
  float value(int which, int64_t slot, int64_t h, int64_t d) const {
    const Tensor& t = which == 0 ? layer.k : layer.v;
    const int64_t b = slot / block_size, o = slot % block_size;
    if (t.dtype == DType::kI8) {
      const Tensor& s = which == 0 ? layer.k_scale : layer.v_scale;
      return static_cast<float>(static_cast<const int8_t*>(t.at(b, o, h))[d]) * *static_cast<const float*>(s.at(b, o, h));
    }
    return static_cast<const float*>(t.at(b, o, h))[d];
  }
  int8_t code(int which, int64_t slot, int64_t h, int64_t d) const {
    const Tensor& t = which == 0 ? layer.k : layer.v;
    return static_cast<const int8_t*>(t.at(slot / block_size, slot % block_size, h))[d];
  }
  float scale(int which, int64_t slot, int64_t h) const {
    const Tensor& s = which == 0 ? layer.k_scale : layer.v_scale;
    return *static_cast<const float*>(s.at(slot / block_size, slot % block_size, h));
  }
};

// The documented int8 row format (docs/kv-cache.md), written independently of the backend: scale = amax / 127,
// code = round-half-even(x / scale), zero row -> scale 0, codes 0.
struct QuantRow {
  float scale = 0;
  std::vector<int8_t> codes;
};
inline QuantRow quantize_row_reference(const float* x, int64_t n) {
  QuantRow r;
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  r.scale = amax / 127.0f;
  r.codes.assign(static_cast<size_t>(n), 0);
  if (r.scale == 0.0f) return r;
  for (int64_t i = 0; i < n; ++i) {
    const float q = x[i] / r.scale;
    float f = std::floor(q);
    const float diff = q - f;
    if (diff > 0.5f || (diff == 0.5f && std::fmod(f, 2.0f) != 0.0f)) f += 1.0f;  // half to even, written out
    r.codes[static_cast<size_t>(i)] = static_cast<int8_t>(std::clamp(f, -127.0f, 127.0f));
  }
  return r;
}

}  // namespace ninfer::testing
