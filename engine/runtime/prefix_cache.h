// Owns prompt-prefix reuse: a tree of full KV blocks keyed by their tokens (each node holds a reference on its
// block), the Gated-DeltaNet state snapshots some nodes carry, longest-prefix matching and LRU eviction.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/runtime/kv_cache.h"
#include "engine/runtime/linear_state.h"

namespace ninfer {

struct PrefixMatch {
  int64_t tokens = 0;           // cached tokens (a whole number of blocks); 0 = nothing to reuse
  std::vector<int32_t> blocks;  // their KV blocks, in order
  int32_t snapshot_row = -1;    // linear-state row holding the GDN state after `tokens` tokens (−1: no linear layers)
  int64_t kv_tokens = 0;        // how far cached K/V matched, snapshot or not (≥ tokens): where prompts branch
};

struct PrefixCacheStats {
  int64_t nodes = 0;      // cached blocks
  int64_t snapshots = 0;  // GDN state snapshots held
};

class PrefixCache {
 public:
  // `snapshot_rows` are the linear-state rows the cache may fill with GDN snapshots; a model with linear-attention
  // layers can only reuse a prefix that ends where a snapshot was taken, so it needs at least one.
  PrefixCache(KvCache& kv, LinearStateCache& state, bool needs_state, std::vector<int32_t> snapshot_rows);
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // The longest cached prefix of `tokens` of at most `max_tokens` tokens that a new sequence can start from: whole
  // blocks and, for a hybrid model, ending at a node with a snapshot. Marks the nodes it walks as recently used.
  PrefixMatch match(std::span<const int32_t> tokens, int64_t max_tokens);

  // Records that `tokens` (a whole number of blocks) have their K/V in `blocks` (a sequence's table, at least as many
  // blocks) and, for a hybrid model, that the GDN state after them is in `state_row` (copied into a snapshot row).
  // Blocks already cached for the same tokens are kept; new nodes take a reference on the sequence's blocks.
  // `shared` marks a snapshot taken where two prompts branch: it is kept in preference to others (see below).
  void insert(std::span<const int32_t> tokens, std::span<const int32_t> blocks, int32_t state_row = -1,
              bool shared = false);

  // Frees at least one block the cache alone holds: the least recently used such node that is a leaf or, when there
  // is none, the least recently used such inner node with everything below it (its descendants leave the cache; the
  // blocks running sequences use stay theirs). False when every cached block is in use. Since any block only the cache
  // holds can be reclaimed, admission's worst-case reservations always find room.
  bool evict_one();

  PrefixCacheStats stats() const { return {live_nodes_, static_cast<int64_t>(rows_ - free_rows_.size())}; }
  // Cached blocks no sequence uses (what eviction can reclaim); walks every node.
  int64_t idle_blocks() const;
  bool needs_state() const { return needs_state_; }
  int64_t block_size() const { return kv_.block_size(); }

 private:
  struct Node {
    int32_t parent = -1;          // −1: a first block
    uint64_t hash = 0;            // of the tokens, seeded with the parent's hash
    std::vector<int32_t> tokens;  // block_size tokens, compared on every lookup (no trust in the hash alone)
    int32_t block = -1;
    std::vector<int32_t> children;
    int32_t snapshot = -1;        // row in state_, or −1
    bool proven = false;          // the snapshot was matched, or taken where prompts branch
    uint64_t last_use = 0;
    bool live = false;
  };

  int32_t find_child(int32_t parent, uint64_t parent_hash, std::span<const int32_t> block_tokens, uint64_t& hash) const;
  // A free snapshot row. When none is free a snapshot is dropped: the least recently used one that was never proven
  // useful (matched, or taken at a branch point), unless proven ones hold more than half the rows (then the least
  // recently used proven one), so one-off tails of finished requests do not push out a shared system prompt.
  int32_t take_snapshot_row();
  void drop(int32_t node);          // a node without children
  void drop_subtree(int32_t node);  // a node and all its descendants, deepest first

  KvCache& kv_;
  LinearStateCache& state_;
  bool needs_state_;
  std::vector<int32_t> free_rows_;
  int64_t rows_ = 0;  // snapshot rows in all
  int64_t live_nodes_ = 0;
  std::vector<Node> nodes_;
  std::vector<int32_t> free_nodes_;
  std::unordered_multimap<uint64_t, int32_t> by_hash_;
  uint64_t clock_ = 0;
};

}  // namespace ninfer
