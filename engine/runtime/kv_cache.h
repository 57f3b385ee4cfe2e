// Owns the paged KV cache: per-layer K/V block tensors (and int8 scales), the reference-counted block pool, each
// sequence's block table.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
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

  // Grows `seq`'s block table to hold `tokens` tokens. When the free list runs short it asks the reclaimer (the
  // prefix cache) for blocks only it holds. Returns false, changing no table, when still too few are free. Never shrinks.
  bool reserve(SeqId seq, int64_t tokens);
  // Drops blocks past the first `tokens` tokens (rollback of rejected draft tokens, or a cancelled tail).
  void truncate(SeqId seq, int64_t tokens);
  // Lets go of every block of `seq` at once.
  void release(SeqId seq);

  // Blocks are reference-counted: each sequence table holding a block is one reference, and so is each holder
  // outside the tables (the prefix cache, docs/prefix-cache.md). A block returns to the free list at zero.
  // Starts `seq`'s (empty) table with `blocks`, a cached prefix whose K/V are already written.
  void adopt(SeqId seq, std::span<const int32_t> blocks);
  void ref(int32_t block);
  void unref(int32_t block);
  int32_t refs(int32_t block) const { return refs_[static_cast<size_t>(block)]; }
  // Called by reserve() while the free list is short: frees at least one block (through unref) or returns false.
  void set_reclaimer(std::function<bool()> reclaim) { reclaim_ = std::move(reclaim); }

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
  std::vector<int32_t> refs_;  // per block
  std::function<bool()> reclaim_;
  std::unordered_map<SeqId, std::vector<int32_t>> tables_;
};

}  // namespace ninfer
