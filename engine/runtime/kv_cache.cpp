#include "engine/runtime/kv_cache.h"

#include "engine/core/error.h"

namespace ninfer {

uint64_t KvCache::bytes_per_token(const ModelConfig& c, DType dtype) {
  return static_cast<uint64_t>(c.num_full_attention_layers()) * 2 * static_cast<uint64_t>(c.num_kv_heads) *
         static_cast<uint64_t>(c.head_dim) * dtype_element_bytes(dtype);
}

KvCache::KvCache(Backend& backend, const ModelConfig& c, const KvCacheConfig& kv) : cfg_(kv) {
  if (kv.dtype != DType::kF32 && kv.dtype != DType::kBF16 && kv.dtype != DType::kF16)
    fail(ErrorKind::kUnsupported, "KV cache dtype {} is not supported (f32, bf16, f16)", dtype_name(kv.dtype));
  if (kv.block_size <= 0 || kv.num_blocks <= 0)
    fail(ErrorKind::kInvalidArgument, "KV cache needs positive block_size and num_blocks (got {} and {})",
         kv.block_size, kv.num_blocks);
  const uint64_t per_layer = static_cast<uint64_t>(kv.num_blocks * kv.block_size * c.num_kv_heads * c.head_dim) *
                             dtype_element_bytes(kv.dtype);
  for (int64_t l = 0; l < c.num_full_attention_layers(); ++l) {
    KvLayer layer;
    for (Tensor* t : {&layer.k, &layer.v}) {
      Buffer b = backend.alloc(per_layer);
      *t = Tensor::make(b.data(), kv.dtype, {kv.num_blocks, kv.block_size, c.num_kv_heads, c.head_dim},
                        backend.device());
      buffers_.push_back(std::move(b));
    }
    layers_.push_back(layer);
  }
  free_.reserve(static_cast<size_t>(kv.num_blocks));
  for (int64_t b = kv.num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

bool KvCache::reserve(SeqId seq, int64_t tokens) {
  auto& table = tables_[seq];
  const int64_t need = (tokens + cfg_.block_size - 1) / cfg_.block_size;
  const int64_t more = need - static_cast<int64_t>(table.size());
  if (more <= 0) return true;
  if (more > free_blocks()) {
    if (table.empty()) tables_.erase(seq);
    return false;
  }
  for (int64_t i = 0; i < more; ++i) {
    table.push_back(free_.back());
    free_.pop_back();
  }
  return true;
}

void KvCache::truncate(SeqId seq, int64_t tokens) {
  auto it = tables_.find(seq);
  if (it == tables_.end()) return;
  const size_t keep = static_cast<size_t>((tokens + cfg_.block_size - 1) / cfg_.block_size);
  while (it->second.size() > keep) {
    free_.push_back(it->second.back());
    it->second.pop_back();
  }
}

void KvCache::release(SeqId seq) {
  auto it = tables_.find(seq);
  if (it == tables_.end()) return;
  for (auto b = it->second.rbegin(); b != it->second.rend(); ++b) free_.push_back(*b);
  tables_.erase(it);
}

const std::vector<int32_t>& KvCache::blocks(SeqId seq) const {
  static const std::vector<int32_t> kEmpty;
  auto it = tables_.find(seq);
  return it == tables_.end() ? kEmpty : it->second;
}

int32_t KvCache::slot(SeqId seq, int64_t position) const {
  const auto& table = blocks(seq);
  const int64_t b = position / cfg_.block_size;
  if (position < 0 || b >= static_cast<int64_t>(table.size()))
    fail(ErrorKind::kInternal, "KV slot of position {} of sequence {}: only {} blocks reserved", position, seq,
         table.size());
  return static_cast<int32_t>(table[static_cast<size_t>(b)] * cfg_.block_size + position % cfg_.block_size);
}

}  // namespace ninfer
