// Owns the argument checks of the paged-KV ops (kv_write, attention) that every backend runs before it touches data.
#pragma once

#include <cstdint>
#include <span>

#include "engine/backend/backend.h"

namespace ninfer {

// Each throws Error(kInvalidArgument) (kUnsupported for a cache dtype no backend takes) naming the op and tensor.

// K and V caches on `device`: [blocks, block_size, n_kv, head_dim] f32/bf16/f16/i8, same shape and dtype; an i8
// cache comes with f32 scales [blocks, block_size, n_kv] (k_scale / v_scale), a float cache with none.
void check_kv_layer(const char* op, const KvLayer& cache, Device device);

// kv_write: the layer (check_kv_layer), k and v f32 [slots.size(), n_kv, head_dim] on `device`, and every
// non-negative slot inside the cache (slot / block_size < blocks). Slots are checked before anything is written.
void check_kv_write(const KvLayer& cache, const Tensor& k, const Tensor& v, std::span<const int32_t> slots,
                    Device device);

// attention: the layer, q and out f32 [T, n_heads, head_dim] with n_heads a multiple of n_kv, the batch spans
// (q_start from 0 to T, seq_len [S] with at least the new rows of each sequence, block_table [S * max_blocks]) and
// every block id a sequence reaches inside the cache.
void check_attention(const Tensor& out, const Tensor& q, const KvLayer& cache, const PagedKv& kv, Device device);

}  // namespace ninfer
