// kv_write: this step's K/V rows into the paged cache, converted (f32/bf16/f16, RNE) or quantized per (token, kv
// head) row to int8 with an f32 scale, bit-identical to the CPU backend (docs/kv-cache.md).
#include <cfloat>
#include <cstdint>

#include "kernels/attention/attention.h"
#include "kernels/common/fault.cuh"
#include "kernels/common/load.cuh"
#include "kernels/common/reduce.cuh"
#include "kernels/common/rows.cuh"

namespace ninfer::kern {

namespace {

constexpr int kWarps = 4;

// The cache row (block, offset, head) of a [blocks, block_size, n_kv, head_dim] Rows view.
template <typename T>
__device__ __forceinline__ T* cache_row(const Rows& c, int64_t block, int64_t off, int64_t head) {
  return static_cast<T*>(c.data) + block * c.lead_stride[0] + off * c.lead_stride[1] + head * c.lead_stride[2];
}

template <typename T>
__device__ __forceinline__ void convert_row(const float* src, T* dst, int64_t n, int lane) {
  for (int64_t d = lane; d < n; d += kWarpSize) dst[d] = from_float<T>(src[d]);
}

// The int8 rule of engine/backend/cpu/attention_int8.h: scale = amax / 127, code = RNE(x / scale) clamped to
// [−127, 127], both IEEE divisions; an all-zero row (or amax / 127 underflowing) gives scale 0 and codes 0.
// Returns false (writing nothing) when the row holds an inf or NaN.
__device__ __forceinline__ bool quantize_row(const float* src, int8_t* dst, float* scale_out, int64_t n, int lane) {
  float amax = 0.0f;
  bool bad = false;
  for (int64_t d = lane; d < n; d += kWarpSize) {
    const float a = fabsf(src[d]);
    bad |= !(a <= FLT_MAX);
    amax = fmaxf(amax, a);
  }
  if (__any_sync(0xffffffffu, bad)) return false;
  amax = warp_max(amax);
  const float scale = __fdiv_rn(amax, 127.0f);
  if (!(scale > 0.0f)) {
    for (int64_t d = lane; d < n; d += kWarpSize) dst[d] = 0;
    if (lane == 0) *scale_out = 0.0f;
    return true;
  }
  for (int64_t d = lane; d < n; d += kWarpSize) {
    const float c = fminf(fmaxf(rintf(__fdiv_rn(src[d], scale)), -127.0f), 127.0f);
    dst[d] = static_cast<int8_t>(__float2int_rn(c));
  }
  if (lane == 0) *scale_out = scale;
  return true;
}

template <typename T>
__global__ void __launch_bounds__(kWarps * kWarpSize)
    kv_write_kernel(const KvCacheView cache, const Rows k, const Rows v, const int32_t* __restrict__ slots,
                    int64_t rows, DeviceFault* fault) {
  const int lane = static_cast<int>(threadIdx.x) & (kWarpSize - 1);
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (r >= rows) return;
  const int64_t nkv = cache.k.lead[2], bs = cache.k.lead[1], hd = cache.k.n;
  const int64_t t = r / nkv, h = r % nkv;
  const int32_t slot = slots[t];
  if (slot < 0) return;
  const int64_t block = slot / bs, off = slot % bs;
  const float* kr = row_ptr<float>(k, r);
  const float* vr = row_ptr<float>(v, r);
  if constexpr (sizeof(T) == 1) {
    float* ks = static_cast<float*>(cache.k_scale.data) + block * cache.k_scale.lead_stride[0] +
                off * cache.k_scale.lead_stride[1] + h;
    float* vs = static_cast<float*>(cache.v_scale.data) + block * cache.v_scale.lead_stride[0] +
                off * cache.v_scale.lead_stride[1] + h;
    if (!quantize_row(kr, cache_row<int8_t>(cache.k, block, off, h), ks, hd, lane)) {
      if (lane == 0) record_fault(fault, FaultCode::kKvNonFinite, t, h, 0);
      return;
    }
    if (!quantize_row(vr, cache_row<int8_t>(cache.v, block, off, h), vs, hd, lane)) {
      if (lane == 0) record_fault(fault, FaultCode::kKvNonFinite, t, h, 1);
    }
  } else {
    convert_row(kr, cache_row<T>(cache.k, block, off, h), hd, lane);
    convert_row(vr, cache_row<T>(cache.v, block, off, h), hd, lane);
  }
}

}  // namespace

void kv_write(cudaStream_t stream, const KvCacheView& cache, const Rows& k, const Rows& v, I32Span slots,
              DeviceFault* fault) {
  const int64_t rows = k.rows;
  if (rows == 0 || slots.n == 0) return;
  const dim3 grid(static_cast<unsigned>((rows + kWarps - 1) / kWarps));
  const dim3 block(kWarps * kWarpSize);
  if (cache.k.type == KType::kI8) {
    kv_write_kernel<int8_t><<<grid, block, 0, stream>>>(cache, k, v, slots.data, rows, fault);
    return;
  }
  visit_float_type(cache.k.type, [&](auto tag) {
    kv_write_kernel<decltype(tag)><<<grid, block, 0, stream>>>(cache, k, v, slots.data, rows, fault);
  });
}

}  // namespace ninfer::kern
