// The CUDA backend's paged KV cache write and GQA attention (kernels/attention/): argument checks shared with the
// CPU (engine/backend/checks/attention_checks.h), the launch shape of the device-side work plan (tiles of query
// vectors, split-K over long contexts) and the launches.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>

#include "engine/backend/checks/attention_checks.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/core/error.h"
#include "kernels/attention/attention.h"
#include "kernels/cuda_check.h"

namespace ninfer::cuda {

namespace {

kern::KvCacheView cache_view(const KvLayer& c) {
  kern::KvCacheView v;
  v.k = rows_of(c.k);
  v.v = rows_of(c.v);
  if (c.k.dtype == DType::kI8) {
    v.k_scale = rows_of(c.k_scale);
    v.v_scale = rows_of(c.v_scale);
  }
  return v;
}

int sm_count(int device) {
  static std::array<std::atomic<int>, 64> cached{};
  if (device < 0 || device >= static_cast<int>(cached.size())) return 80;
  int n = cached[static_cast<size_t>(device)].load(std::memory_order_relaxed);
  if (n == 0) {
    NINFER_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    cached[static_cast<size_t>(device)].store(n, std::memory_order_relaxed);
  }
  return n;
}

// Resident attention CTAs per SM for a config and cache dtype (kern::attention_ctas_per_sm), cached per device.
int ctas_per_sm(int device, const kern::AttnConfig& c, kern::KType type) {
  // key: type (f32/f16/bf16/i8 = 0..3) × nc (1/2/4) × mw (1/2/4/8)
  static std::array<std::array<std::atomic<int>, 4 * 3 * 4>, 64> cached{};
  const int ti = static_cast<int>(type);
  const int ni = c.nc == 1 ? 0 : c.nc == 2 ? 1 : 2;
  const int mi = c.mw == 1 ? 0 : c.mw == 2 ? 1 : c.mw == 4 ? 2 : 3;
  if (device < 0 || device >= static_cast<int>(cached.size()) || ti < 0 || ti > 3)
    return kern::attention_ctas_per_sm(c, type);
  std::atomic<int>& slot = cached[static_cast<size_t>(device)][static_cast<size_t>((ti * 3 + ni) * 4 + mi)];
  int n = slot.load(std::memory_order_relaxed);
  if (n == 0) {
    n = kern::attention_ctas_per_sm(c, type);
    slot.store(n, std::memory_order_relaxed);
  }
  return n;
}

// Split-K (attention_plan.h): only when the batch's tiles give fewer CTAs than one wave holds (the kernel's resident
// CTAs per SM, at least kCtasPerSm, × SMs), in ranges of at least kMinSplit keys: a decode step of few long sequences
// otherwise runs a handful of CTAs whose warps each walk the whole context.
constexpr int64_t kCtasPerSm = 2;
constexpr int64_t kMinSplit = 256;

}  // namespace

void CudaBackend::kv_write(const KvLayer& cache, const Tensor& k, const Tensor& v, std::span<const int32_t> slots) {
  check_kv_write(cache, k, v, slots, Device::kCuda);
  if (k.numel() == 0) return;
  kern::kv_write(stream_, cache_view(cache), rows_of(k), rows_of(v), upload(slots), fault_slot());
  after_launch("kv_write");
}

void CudaBackend::attention(const Tensor& out, const Tensor& q, const KvLayer& cache, const PagedKv& kv, float scale) {
  check_attention(out, q, cache, kv, Device::kCuda);
  const int64_t T = q.dim(0), nh = q.dim(1), hd = q.dim(2), nkv = cache.k.dim(2);
  if (hd > kern::kAttnMaxHeadDim)
    fail(ErrorKind::kUnsupported, "attention: head_dim {} of q {} is above the {} the cuda kernels take", hd,
         q.describe(), kern::kAttnMaxHeadDim);
  if (T == 0 || hd == 0) return;
  const int64_t G = nh / nkv, S = kv.num_seqs();

  int64_t max_vectors = 0;
  for (int64_t s = 0; s < S; ++s)
    max_vectors = std::max<int64_t>(max_vectors, (kv.q_start[static_cast<size_t>(s + 1)] - kv.q_start[static_cast<size_t>(s)]) * G);
  const kern::AttnConfig cfg = kern::attention_config(hd, max_vectors);

  // The plan itself is made on the device from q_start / seq_len (kernels/attention/attention_plan.h); the host
  // sizes the launches from the step's shape alone, so a recorded graph replays correctly with other lengths.
  kern::AttnPlanShape plan;
  plan.S = static_cast<int32_t>(S);
  plan.G = static_cast<int32_t>(G);
  plan.M = cfg.m();
  plan.n_kv = static_cast<int32_t>(nkv);
  plan.target = std::max<int64_t>(kCtasPerSm, ctas_per_sm(device_, cfg, ktype(cache.k.dtype))) * sm_count(device_);
  plan.min_split = kMinSplit;
  const int64_t tiles = kern::attention_plan_tiles(kv.q_start.data(), plan);
  if (tiles == 0) return;

  kern::AttentionArgs a;
  a.q = rows_of(q);
  a.out = rows_of(out);
  a.cache = cache_view(cache);
  a.block_table = upload(kv.block_table.subspan(0, static_cast<size_t>(S * kv.max_blocks)));
  a.max_blocks = kv.max_blocks;
  a.n_heads = static_cast<int32_t>(nh);
  a.n_kv = static_cast<int32_t>(nkv);
  a.head_dim = static_cast<int32_t>(hd);
  a.scale = scale;
  a.config = cfg;
  a.q_start = upload(kv.q_start);
  a.seq_len = upload(kv.seq_len);
  a.plan = plan;
  a.bounds = kern::attention_plan_bounds(tiles, plan);
  a.plan_ws = static_cast<int32_t*>(
      workspace("attention.plan", static_cast<size_t>(kern::attention_plan_ints(a.bounds)) * sizeof(int32_t)));
  a.partial = static_cast<float*>(workspace(
      "attention.partials", static_cast<size_t>(kern::attention_partial_floats(a.bounds.slots, nkv, cfg)) * sizeof(float)));
  a.fault = fault_slot();
  kern::paged_attention(stream_, a);
  after_launch("attention");
}

}  // namespace ninfer::cuda
