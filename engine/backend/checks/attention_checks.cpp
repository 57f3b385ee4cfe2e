#include "engine/backend/checks/attention_checks.h"

#include "engine/backend/op_checks.h"
#include "engine/core/error.h"

namespace ninfer {

namespace {

void check_cache(const char* op, const char* arg, const Tensor& c, Device device) {
  check_on(op, arg, c, device);
  if (c.dtype != DType::kF32 && c.dtype != DType::kBF16 && c.dtype != DType::kF16 && c.dtype != DType::kI8)
    fail(ErrorKind::kUnsupported, "{}: {} dtype {} not supported (f32/bf16/f16/i8)", op, arg, c.describe());
  if (c.ndim != 4)
    fail(ErrorKind::kInvalidArgument, "{}: {} must be [blocks, block_size, n_kv, head_dim], got {}", op, arg,
         c.describe());
}

// The scale tensor of an i8 cache: f32 [blocks, block_size, n_kv]; a float cache takes none.
void check_scale(const char* op, const char* arg, const Tensor& s, const Tensor& cache, Device device) {
  if (cache.dtype != DType::kI8) {
    if (s.data != nullptr)
      fail(ErrorKind::kInvalidArgument, "{}: {} is given ({}) but the {} cache takes no scales", op, arg, s.describe(),
           dtype_name(cache.dtype));
    return;
  }
  if (s.data == nullptr)
    fail(ErrorKind::kInvalidArgument, "{}: {} is missing: the i8 cache {} needs f32 scales [{}, {}, {}]", op, arg,
         cache.describe(), cache.dim(0), cache.dim(1), cache.dim(2));
  check_f32_on(op, arg, s, device);
  check_dims(op, arg, s, {cache.dim(0), cache.dim(1), cache.dim(2)});
}

}  // namespace

void check_kv_layer(const char* op, const KvLayer& c, Device device) {
  check_cache(op, "k_cache", c.k, device);
  check_cache(op, "v_cache", c.v, device);
  check_same_shape(op, "v_cache", c.v, c.k);
  if (c.v.dtype != c.k.dtype)
    fail(ErrorKind::kInvalidArgument, "{}: k_cache {} and v_cache {} differ in dtype", op, c.k.describe(),
         c.v.describe());
  check_scale(op, "k_scale", c.k_scale, c.k, device);
  check_scale(op, "v_scale", c.v_scale, c.v, device);
}

void check_kv_write(const KvLayer& cache, const Tensor& k, const Tensor& v, std::span<const int32_t> slots,
                    Device device) {
  check_kv_layer("kv_write", cache, device);
  check_f32_on("kv_write", "k", k, device);
  check_f32_on("kv_write", "v", v, device);
  const int64_t nb = cache.k.dim(0), bs = cache.k.dim(1), nkv = cache.k.dim(2), hd = cache.k.dim(3);
  check_dims("kv_write", "k", k, {static_cast<int64_t>(slots.size()), nkv, hd});
  check_same_shape("kv_write", "v", v, k);
  for (const int32_t slot : slots) {
    if (slot < 0) continue;
    if (bs == 0 || slot / bs >= nb)
      fail(ErrorKind::kInvalidArgument, "kv_write: slot {} (block {}) beyond the {} cache blocks", slot, slot / bs, nb);
  }
}

void check_attention(const Tensor& out, const Tensor& q, const KvLayer& cache, const PagedKv& kv, Device device) {
  check_kv_layer("attention", cache, device);
  const Tensor& k_cache = cache.k;
  check_f32_on("attention", "q", q, device);
  check_f32_on("attention", "out", out, device);
  if (q.ndim != 3) fail(ErrorKind::kInvalidArgument, "attention: q must be [T, n_heads, head_dim], got {}", q.describe());
  check_same_shape("attention", "out", out, q);
  const int64_t T = q.dim(0), nh = q.dim(1), hd = q.dim(2);
  const int64_t nblocks = k_cache.dim(0), bs = k_cache.dim(1), nkv = k_cache.dim(2);
  if (bs == 0) fail(ErrorKind::kInvalidArgument, "attention: the cache {} has block_size 0", k_cache.describe());
  if (k_cache.dim(3) != hd)
    fail(ErrorKind::kInvalidArgument, "attention: head_dim of q {} and cache {} differ", q.describe(), k_cache.describe());
  if (nkv == 0 || nh % nkv != 0)
    fail(ErrorKind::kInvalidArgument, "attention: n_heads {} is not a multiple of n_kv {}", nh, nkv);
  check_batch("attention", kv.q_start, T);
  const int64_t S = kv.num_seqs();
  if (static_cast<int64_t>(kv.seq_len.size()) != S ||
      static_cast<int64_t>(kv.block_table.size()) < S * static_cast<int64_t>(kv.max_blocks))
    fail(ErrorKind::kInvalidArgument, "attention: {} sequences but seq_len has {} and block_table {} entries (max_blocks {})",
         S, kv.seq_len.size(), kv.block_table.size(), kv.max_blocks);
  for (int64_t s = 0; s < S; ++s) {
    const int64_t n_new = kv.q_start[static_cast<size_t>(s + 1)] - kv.q_start[static_cast<size_t>(s)];
    const int64_t len = kv.seq_len[static_cast<size_t>(s)];
    if (len < n_new) fail(ErrorKind::kInvalidArgument, "attention: sequence {} has {} new tokens but seq_len {}", s, n_new, len);
    const int64_t need = (len + bs - 1) / bs;
    if (need > kv.max_blocks)
      fail(ErrorKind::kInvalidArgument, "attention: sequence {} needs {} blocks, block_table has {}", s, need, kv.max_blocks);
    for (int64_t b = 0; b < need; ++b) {
      const int32_t id = kv.block_table[static_cast<size_t>(s * kv.max_blocks + b)];
      if (id < 0 || id >= nblocks)
        fail(ErrorKind::kInvalidArgument, "attention: sequence {} block {} -> {} outside [0, {})", s, b, id, nblocks);
    }
  }
}

}  // namespace ninfer
