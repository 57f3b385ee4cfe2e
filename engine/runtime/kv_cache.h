// Owns the paged KV cache: per-layer K/V block tensors (and int8 scales), the free-block pool, each sequence's block table.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/model/model_config.h"

namespace ninfer {

using SeqId = int64_t;

struct KvCacheConfig {
  int64_t block_size = 16;  // tokens per block (docs/architecture.md: why 16)
  int64_t num_blocks = 0;   // blocks per layer; capacity = num_blocks · block_size tokens in all
  DType dtype = DType::kF32;  // f32 | bf16 | f16 | i8 (int8 codes + an f32 scale per token and kv head, docs/kv-cache.md)
};

class KvCache {
 public:
  // Allocates [num_blocks, block_size, n_kv, head_dim] K and V tensors for every full-attention layer, and for i8 the
  // f32 [num_blocks, block_size, n_kv] k_scale and v_scale tensors next to them.
  KvCache(Backend& backend, const ModelConfig& config, const KvCacheConfig& kv);

  // Grows `seq`'s block table to hold `tokens` tokens. Returns false, changing nothing, when the pool has
  // too few free blocks. Never shrinks.
  bool reserve(SeqId seq, int64_t tokens);
  // Drops blocks past the first `tokens` tokens (rollback of rejected draft tokens, or a cancelled tail).
  void truncate(SeqId seq, int64_t tokens);
  // Frees every block of `seq` at once.
  void release(SeqId seq);

  const std::vector<int32_t>& blocks(SeqId seq) const;
  // Cache row of token `position` of `seq` (block · block_size + offset); the block must be reserved.
  int32_t slot(SeqId seq, int64_t position) const;

  int64_t block_size() const { return cfg_.block_size; }
  int64_t total_blocks() const { return cfg_.num_blocks; }
  int64_t free_blocks() const { return static_cast<int64_t>(free_.size()); }
  int64_t used_blocks() const { return total_blocks() - free_blocks(); }
  int64_t capacity_tokens() const { return cfg_.num_blocks * cfg_.block_size; }
  DType dtype() const { return cfg_.dtype; }

  // K / V (and their scales, for an int8 cache) of the i-th full-attention layer (counting full-attention layers only).
  const KvLayer& layer(int64_t attn_layer) const { return layers_[static_cast<size_t>(attn_layer)]; }

  // Bytes one token occupies across all layers (K and V, and for i8 their f32 scales), for memory planning:
  //   layers · 2 · n_kv · (head_dim · element_bytes + (i8 ? 4 : 0)).
  static uint64_t bytes_per_token(const ModelConfig& config, DType dtype);
  // Bytes this cache allocated (= capacity_tokens() · bytes_per_token()).
  uint64_t allocated_bytes() const;

 private:
  KvCacheConfig cfg_;
  std::vector<Buffer> buffers_;
  std::vector<KvLayer> layers_;
  std::vector<int32_t> free_;  // a stack: the most recently freed block is reused first
  std::unordered_map<SeqId, std::vector<int32_t>> tables_;
};

}  // namespace ninfer
