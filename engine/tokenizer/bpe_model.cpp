// Owns the BPE merge loop (rank array for short pieces, a heap for long ones), the hash tables and the cache.
#include "engine/tokenizer/bpe_model.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "engine/core/error.h"

namespace ninfer {

uint64_t hash_bytes(std::string_view s) {
  // 64-bit multiply-mix over 8-byte words; keys are short byte strings.
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = 0x243F6A8885A308D3ull ^ (s.size() * kMul);
  const char* p = s.data();
  size_t n = s.size();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  if (n) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  }
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 31;
  return h;
}

void ByteStringMap::build(const std::vector<std::pair<std::string, int32_t>>& entries) {
  size_t cap = 16;
  while (cap < entries.size() * 2) cap <<= 1;
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  arena_.clear();
  count_ = 0;
  for (const auto& [key, id] : entries) {
    uint64_t h = hash_bytes(key);
    for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.id < 0) {
        s = Slot{h, static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(key.size()), id};
        arena_.append(key);
        ++count_;
        break;
      }
      if (s.hash == h && std::string_view(arena_).substr(s.offset, s.length) == key)
        fail(ErrorKind::kCorrupt, "tokenizer vocabulary: duplicate token bytes for ids {} and {}", s.id, id);
    }
  }
}

int32_t ByteStringMap::find(std::string_view key) const {
  uint64_t h = hash_bytes(key);
  for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.id < 0) return -1;
    if (s.hash == h && s.length == key.size() && std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0)
      return s.id;
  }
}

void PairMap::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  count_ = 0;
}

bool PairMap::insert(int32_t left, int32_t right, int32_t rank, int32_t merged) {
  uint64_t key = pack(left, right);
  for (uint64_t i = slot_of(key);; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.key == kEmpty) {
      s = Slot{key, rank, merged};
      ++count_;
      return true;
    }
    if (s.key == key) {  // a repeated merge: the later rank wins, as in HF tokenizers' merge map
      s.rank = rank;
      s.merged = merged;
      return false;
    }
  }
}

BpeModel::BpeModel(const std::vector<std::pair<std::string, int32_t>>& vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges)
    : ignore_merges_(ignore_merges), cache_(new Shard[kCacheShards]) {
  vocab_.build(vocab);
  for (int b = 0; b < 256; ++b) {
    char c = static_cast<char>(b);
    byte_ids_[b] = vocab_.find(std::string_view(&c, 1));
    if (byte_ids_[b] < 0)
      fail(ErrorKind::kUnsupported, "tokenizer vocabulary has no token for byte 0x{:02X}: not a byte-level BPE", b);
  }
  merges_.reserve(merges.size());
  std::string joined;
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto& [a, b] = merges[r];
    int32_t ia = vocab_.find(a), ib = vocab_.find(b);
    joined = a;
    joined += b;
    int32_t im = vocab_.find(joined);
    if (ia < 0 || ib < 0 || im < 0)
      fail(ErrorKind::kCorrupt, "tokenizer merge #{} refers to a token that is not in the vocabulary", r);
    merges_.insert(ia, ib, static_cast<int32_t>(r), im);
  }
}

void BpeModel::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.size() == 1) {
    out.push_back(byte_ids_[static_cast<unsigned char>(piece[0])]);
    return;
  }
  if (ignore_merges_) {
    int32_t id = vocab_.find(piece);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  if (piece.size() > kCacheMaxBytes) {
    merge(piece, out);
    return;
  }
  Shard& shard = cache_[hash_bytes(piece) % kCacheShards];
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.map.find(std::string(piece));
    if (it != shard.map.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t start = out.size();
  merge(piece, out);
  std::lock_guard<std::mutex> lock(shard.mu);
  if (shard.map.size() < kCacheMaxEntries)
    shard.map.emplace(std::string(piece),
                      std::vector<int32_t>(out.begin() + static_cast<std::ptrdiff_t>(start), out.end()));
}

namespace {

struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
};

constexpr int32_t kNoRank = INT32_MAX;

}  // namespace

void BpeModel::merge(std::string_view piece, std::vector<int32_t>& out) const {
  thread_local std::vector<Symbol> sym;
  const int32_t n = static_cast<int32_t>(piece.size());
  sym.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i)
    sym[i] = {byte_ids_[static_cast<unsigned char>(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};

  auto pair_rank = [&](int32_t i, int32_t* merged) {
    int32_t r;
    if (sym[i].next >= 0 && merges_.find(sym[i].id, sym[sym[i].next].id, &r, merged)) return r;
    return kNoRank;
  };
  auto merge_at = [&](int32_t i, int32_t merged) {
    int32_t j = sym[i].next;
    sym[i].id = merged;
    sym[i].next = sym[j].next;
    if (sym[j].next >= 0) sym[sym[j].next].prev = i;
    sym[j].id = -1;  // removed
  };

  if (n <= 48) {
    // Rank of the pair starting at each live symbol; merge the minimum (leftmost on ties) until none is left.
    thread_local std::vector<int32_t> rank, target;
    rank.resize(static_cast<size_t>(n));
    target.resize(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) rank[i] = pair_rank(i, &target[i]);
    for (;;) {
      int32_t best = -1, best_rank = kNoRank;
      for (int32_t i = 0; i >= 0; i = sym[i].next)
        if (rank[i] < best_rank) best_rank = rank[i], best = i;
      if (best < 0) break;
      merge_at(best, target[best]);
      rank[best] = pair_rank(best, &target[best]);
      if (sym[best].prev >= 0) rank[sym[best].prev] = pair_rank(sym[best].prev, &target[sym[best].prev]);
    }
  } else {
    // Min-heap of (rank, position); stale entries are skipped when popped.
    thread_local std::vector<uint64_t> heap;
    heap.clear();
    auto push = [&](int32_t i) {
      int32_t merged = 0;
      int32_t r = pair_rank(i, &merged);
      if (r != kNoRank) {
        heap.push_back((uint64_t(uint32_t(r)) << 32) | uint32_t(i));
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
      }
    };
    for (int32_t i = 0; i < n; ++i) push(i);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      uint64_t top = heap.back();
      heap.pop_back();
      int32_t r = static_cast<int32_t>(top >> 32), i = static_cast<int32_t>(top & 0xFFFFFFFFu);
      if (sym[i].id < 0) continue;
      int32_t merged = 0;
      if (pair_rank(i, &merged) != r) continue;  // the pair at i changed since this entry was pushed
      merge_at(i, merged);
      push(i);
      if (sym[i].prev >= 0) push(sym[i].prev);
    }
  }
  for (int32_t i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
}

}  // namespace ninfer
