#include "engine/runtime/kv_cache.h"

#include "engine/core/error.h"

namespace ninfer {

namespace {
void check_dtype(DType dtype) {
  if (dtype != DType::kF32 && dtype != DType::kBF16 && dtype != DType::kF16 && dtype != DType::kI8)
    fail(ErrorKind::kUnsupported, "KV cache dtype {} is not supported (f32, bf16, f16, i8)", dtype_name(dtype));
}

// Bytes of one token's K (or V) row of one kv head: the codes, plus the f32 scale of an i8 row.
uint64_t row_bytes(const ModelConfig& c, DType dtype) {
  return static_cast<uint64_t>(c.head_dim) * dtype_element_bytes(dtype) + (dtype == DType::kI8 ? sizeof(float) : 0);
}
}  // namespace

uint64_t KvCache::bytes_per_token(const ModelConfig& c, DType dtype) {
  check_dtype(dtype);
  return static_cast<uint64_t>(c.num_full_attention_layers()) * 2 * static_cast<uint64_t>(c.num_kv_heads) *
         row_bytes(c, dtype);
}

KvCache::KvCache(Backend& backend, const ModelConfig& c, const KvCacheConfig& kv) : cfg_(kv) {
  check_dtype(kv.dtype);
  if (kv.block_size <= 0 || kv.num_blocks <= 0)
    fail(ErrorKind::kInvalidArgument, "KV cache needs positive block_size and num_blocks (got {} and {})",
         kv.block_size, kv.num_blocks);
  const int64_t rows = kv.num_blocks * kv.block_size * c.num_kv_heads;  // (token, kv head) rows per layer
  const uint64_t per_layer = static_cast<uint64_t>(rows * c.head_dim) * dtype_element_bytes(kv.dtype);
  auto make = [&](DType dtype, uint64_t bytes, std::initializer_list<int64_t> shape) {
    Buffer b = backend.alloc(bytes);
    Tensor t = Tensor::make(b.data(), dtype, shape, backend.device());
    buffers_.push_back(std::move(b));
    return t;
  };
  for (int64_t l = 0; l < c.num_full_attention_layers(); ++l) {
    KvLayer layer;
    for (Tensor* t : {&layer.k, &layer.v})
      *t = make(kv.dtype, per_layer, {kv.num_blocks, kv.block_size, c.num_kv_heads, c.head_dim});
    if (kv.dtype == DType::kI8)
      for (Tensor* t : {&layer.k_scale, &layer.v_scale})
        *t = make(DType::kF32, static_cast<uint64_t>(rows) * sizeof(float), {kv.num_blocks, kv.block_size, c.num_kv_heads});
    layers_.push_back(layer);
  }
  free_.reserve(static_cast<size_t>(kv.num_blocks));
  refs_.assign(static_cast<size_t>(kv.num_blocks), 0);
  for (int64_t b = kv.num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

uint64_t KvCache::allocated_bytes() const {
  uint64_t n = 0;
  for (const Buffer& b : buffers_) n += b.bytes;
  return n;
}

bool KvCache::reserve(SeqId seq, int64_t tokens) {
  auto& table = tables_[seq];
  const int64_t need = (tokens + cfg_.block_size - 1) / cfg_.block_size;
  const int64_t more = need - static_cast<int64_t>(table.size());
  if (more <= 0) return true;
  while (more > free_blocks() && reclaim_ && reclaim_()) {
  }
  if (more > free_blocks()) {
    if (table.empty()) tables_.erase(seq);
    return false;
  }
  for (int64_t i = 0; i < more; ++i) {
    const int32_t b = free_.back();
    free_.pop_back();
    refs_[static_cast<size_t>(b)] = 1;
    table.push_back(b);
  }
  return true;
}

void KvCache::adopt(SeqId seq, std::span<const int32_t> blocks) {
  auto& table = tables_[seq];
  if (!table.empty())
    fail(ErrorKind::kInternal, "KV cache: sequence {} adopts a cached prefix but already holds {} blocks", seq,
         table.size());
  for (int32_t b : blocks) ref(b);
  table.assign(blocks.begin(), blocks.end());
}

void KvCache::ref(int32_t block) {
  if (block < 0 || block >= cfg_.num_blocks || refs_[static_cast<size_t>(block)] <= 0)
    fail(ErrorKind::kInternal, "KV cache: reference to block {} that is not in use", block);
  ++refs_[static_cast<size_t>(block)];
}

void KvCache::unref(int32_t block) {
  if (block < 0 || block >= cfg_.num_blocks || refs_[static_cast<size_t>(block)] <= 0)
    fail(ErrorKind::kInternal, "KV cache: block {} released more often than referenced", block);
  if (--refs_[static_cast<size_t>(block)] == 0) free_.push_back(block);
}

void KvCache::truncate(SeqId seq, int64_t tokens) {
  auto it = tables_.find(seq);
  if (it == tables_.end()) return;
  const size_t keep = static_cast<size_t>((tokens + cfg_.block_size - 1) / cfg_.block_size);
  while (it->second.size() > keep) {
    unref(it->second.back());
    it->second.pop_back();
  }
}

void KvCache::release(SeqId seq) {
  auto it = tables_.find(seq);
  if (it == tables_.end()) return;
  for (auto b = it->second.rbegin(); b != it->second.rend(); ++b) unref(*b);
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
