// Owns the byte-level BPE model: vocabulary and merge tables, and the merge loop with its piece cache.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ninfer {

// Open-addressing map from byte strings to ids; keys live in one arena.
class ByteStringMap {
 public:
  void build(const std::vector<std::pair<std::string, int32_t>>& entries);
  // -1 when absent.
  int32_t find(std::string_view key) const;
  size_t size() const { return count_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t offset = 0;
    uint32_t length = 0;
    int32_t id = -1;
  };
  std::string arena_;
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  size_t count_ = 0;
};

// Open-addressing map from a token-id pair to (merge rank, merged id).
class PairMap {
 public:
  void reserve(size_t n);
  // Returns false when the pair was already present (it is overwritten: the later rank wins, as in HF).
  bool insert(int32_t left, int32_t right, int32_t rank, int32_t merged);
  // Returns false when absent.
  bool find(int32_t left, int32_t right, int32_t* rank, int32_t* merged) const {
    uint64_t key = pack(left, right);
    for (uint64_t i = slot_of(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == kEmpty) return false;
      if (s.key == key) {
        *rank = s.rank;
        *merged = s.merged;
        return true;
      }
    }
  }
  size_t size() const { return count_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    int32_t rank = 0;
    int32_t merged = 0;
  };
  static uint64_t pack(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  uint64_t slot_of(uint64_t key) const { return ((key * 0x9E3779B97F4A7C15ull) >> 17) & mask_; }
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  size_t count_ = 0;
};

// Byte-level BPE as HF `tokenizers` runs it: every byte starts as its own symbol, then the adjacent pair with the
// lowest merge rank is merged (leftmost first on ties) until no pair has a merge. With ignore_merges, a piece that
// is itself in the vocabulary becomes that one token first.
class BpeModel {
 public:
  // `vocab`: raw token bytes -> id; `merges`: pairs of raw token bytes in rank order.
  BpeModel(const std::vector<std::pair<std::string, int32_t>>& vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges);

  // Appends the ids of one pre-token (raw bytes).
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;

  int32_t find(std::string_view bytes) const { return vocab_.find(bytes); }
  size_t vocab_size() const { return vocab_.size(); }
  size_t merges_size() const { return merges_.size(); }
  bool ignore_merges() const { return ignore_merges_; }

 private:
  void merge(std::string_view piece, std::vector<int32_t>& out) const;

  ByteStringMap vocab_;
  PairMap merges_;
  int32_t byte_ids_[256];
  bool ignore_merges_;

  // Cache of merged pieces (pieces up to kCacheMaxBytes); sharded to keep lock contention low.
  static constexpr size_t kCacheShards = 16;
  static constexpr size_t kCacheMaxBytes = 64;
  static constexpr size_t kCacheMaxEntries = 1 << 16;  // per shard
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>> map;
  };
  std::unique_ptr<Shard[]> cache_;
};

uint64_t hash_bytes(std::string_view s);

}  // namespace ninfer
