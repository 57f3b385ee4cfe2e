#include "engine/runtime/prefix_cache.h"

#include <algorithm>

#include <xxhash.h>

#include "engine/core/error.h"

namespace ninfer {

namespace {
uint64_t hash_block(std::span<const int32_t> tokens, uint64_t seed) {
  return XXH3_64bits_withSeed(tokens.data(), tokens.size_bytes(), seed);
}
}  // namespace

PrefixCache::PrefixCache(KvCache& kv, LinearStateCache& state, bool needs_state, std::vector<int32_t> snapshot_rows)
    : kv_(kv), state_(state), needs_state_(needs_state), free_rows_(std::move(snapshot_rows)),
      rows_(static_cast<int64_t>(free_rows_.size())) {
  if (needs_state_ && free_rows_.empty())
    fail(ErrorKind::kInvalidArgument,
         "prefix cache: a model with linear-attention layers needs at least one GDN state snapshot row");
  std::reverse(free_rows_.begin(), free_rows_.end());  // taken from the back: lowest row first
}

PrefixCache::~PrefixCache() {
  for (const Node& n : nodes_)
    if (n.live) kv_.unref(n.block);
}

int32_t PrefixCache::find_child(int32_t parent, uint64_t parent_hash, std::span<const int32_t> block_tokens,
                                uint64_t& hash) const {
  hash = hash_block(block_tokens, parent_hash);
  auto [lo, hi] = by_hash_.equal_range(hash);
  for (auto it = lo; it != hi; ++it) {
    const Node& n = nodes_[static_cast<size_t>(it->second)];
    if (n.parent == parent && std::equal(n.tokens.begin(), n.tokens.end(), block_tokens.begin(), block_tokens.end()))
      return it->second;
  }
  return -1;
}

PrefixMatch PrefixCache::match(std::span<const int32_t> tokens, int64_t max_tokens) {
  const int64_t bs = kv_.block_size();
  const int64_t limit = std::min<int64_t>(max_tokens, static_cast<int64_t>(tokens.size())) / bs;
  std::vector<int32_t> chain;
  int32_t parent = -1;
  uint64_t parent_hash = 0;
  size_t usable = 0;  // chain[0, usable) can be reused
  for (int64_t b = 0; b < limit; ++b) {
    uint64_t h = 0;
    const int32_t node = find_child(parent, parent_hash, tokens.subspan(static_cast<size_t>(b * bs), static_cast<size_t>(bs)), h);
    if (node < 0) break;
    chain.push_back(node);
    if (!needs_state_ || nodes_[static_cast<size_t>(node)].snapshot >= 0) usable = chain.size();
    parent = node;
    parent_hash = h;
  }
  PrefixMatch m;
  m.kv_tokens = static_cast<int64_t>(chain.size()) * bs;
  if (usable == 0) return m;
  ++clock_;
  for (size_t i = 0; i < usable; ++i) {
    Node& n = nodes_[static_cast<size_t>(chain[i])];
    n.last_use = clock_;
    m.blocks.push_back(n.block);
  }
  m.tokens = static_cast<int64_t>(usable) * bs;
  if (needs_state_) {
    Node& end = nodes_[static_cast<size_t>(chain[usable - 1])];
    m.snapshot_row = end.snapshot;
    end.proven = true;
  }
  return m;
}

void PrefixCache::insert(std::span<const int32_t> tokens, std::span<const int32_t> blocks, int32_t state_row,
                         bool shared) {
  const int64_t bs = kv_.block_size();
  const int64_t n = static_cast<int64_t>(tokens.size()) / bs;
  if (static_cast<int64_t>(tokens.size()) != n * bs || static_cast<int64_t>(blocks.size()) < n)
    fail(ErrorKind::kInternal, "prefix cache: {} tokens in {} blocks of {} is not a whole-block prefix", tokens.size(),
         blocks.size(), bs);
  if (needs_state_ && state_row < 0) fail(ErrorKind::kInternal, "prefix cache: a hybrid prefix needs its GDN state");
  if (n == 0) return;
  ++clock_;
  int32_t parent = -1;
  uint64_t parent_hash = 0;
  for (int64_t b = 0; b < n; ++b) {
    const auto block_tokens = tokens.subspan(static_cast<size_t>(b * bs), static_cast<size_t>(bs));
    uint64_t h = 0;
    int32_t node = find_child(parent, parent_hash, block_tokens, h);
    if (node < 0) {
      if (free_nodes_.empty()) {
        node = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
      } else {
        node = free_nodes_.back();
        free_nodes_.pop_back();
      }
      Node& fresh = nodes_[static_cast<size_t>(node)];
      fresh = Node{};
      fresh.parent = parent;
      fresh.hash = h;
      fresh.tokens.assign(block_tokens.begin(), block_tokens.end());
      fresh.block = blocks[static_cast<size_t>(b)];
      fresh.live = true;
      kv_.ref(fresh.block);
      if (parent >= 0) nodes_[static_cast<size_t>(parent)].children.push_back(node);
      by_hash_.emplace(h, node);
      ++live_nodes_;
    }
    nodes_[static_cast<size_t>(node)].last_use = clock_;
    parent = node;
    parent_hash = h;
  }
  if (needs_state_ && nodes_[static_cast<size_t>(parent)].snapshot < 0) {
    const int32_t row = take_snapshot_row();
    state_.copy_slot(row, state_row);
    nodes_[static_cast<size_t>(parent)].snapshot = row;
    nodes_[static_cast<size_t>(parent)].proven = false;
  }
  if (shared) nodes_[static_cast<size_t>(parent)].proven = true;
}

int32_t PrefixCache::take_snapshot_row() {
  if (free_rows_.empty()) {
    int64_t proven = 0;
    for (const Node& n : nodes_) proven += n.live && n.snapshot >= 0 && n.proven ? 1 : 0;
    // Which class gives up a snapshot: the unproven ones, unless there are none or proven ones hold over half.
    const bool from_proven = proven * 2 > rows_ || proven == rows_;
    int32_t oldest = -1;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Node& n = nodes_[i];
      if (n.live && n.snapshot >= 0 && n.proven == from_proven &&
          (oldest < 0 || n.last_use < nodes_[static_cast<size_t>(oldest)].last_use))
        oldest = static_cast<int32_t>(i);
    }
    if (oldest < 0) fail(ErrorKind::kInternal, "prefix cache: no snapshot row is free and none is held");
    free_rows_.push_back(nodes_[static_cast<size_t>(oldest)].snapshot);
    nodes_[static_cast<size_t>(oldest)].snapshot = -1;
  }
  const int32_t row = free_rows_.back();
  free_rows_.pop_back();
  return row;
}

void PrefixCache::drop(int32_t node) {
  Node& n = nodes_[static_cast<size_t>(node)];
  auto [lo, hi] = by_hash_.equal_range(n.hash);
  for (auto it = lo; it != hi; ++it)
    if (it->second == node) {
      by_hash_.erase(it);
      break;
    }
  if (!n.children.empty()) fail(ErrorKind::kInternal, "prefix cache: dropping node {} with {} children", node, n.children.size());
  if (n.parent >= 0) std::erase(nodes_[static_cast<size_t>(n.parent)].children, node);
  if (n.snapshot >= 0) free_rows_.push_back(n.snapshot);
  kv_.unref(n.block);
  n = Node{};
  free_nodes_.push_back(node);
  --live_nodes_;
}

void PrefixCache::drop_subtree(int32_t node) {
  while (!nodes_[static_cast<size_t>(node)].children.empty()) drop_subtree(nodes_[static_cast<size_t>(node)].children.back());
  drop(node);
}

bool PrefixCache::evict_one() {
  int32_t leaf = -1, inner = -1;  // least recently used idle leaf, idle inner node
  auto older = [&](int32_t candidate, size_t i) {
    return candidate < 0 || nodes_[i].last_use < nodes_[static_cast<size_t>(candidate)].last_use;
  };
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (!n.live || kv_.refs(n.block) > 1) continue;
    int32_t& best = n.children.empty() ? leaf : inner;
    if (older(best, i)) best = static_cast<int32_t>(i);
  }
  if (leaf >= 0) {
    drop(leaf);
    return true;
  }
  if (inner < 0) return false;
  drop_subtree(inner);
  return true;
}

int64_t PrefixCache::idle_blocks() const {
  int64_t idle = 0;
  for (const Node& n : nodes_) idle += n.live && kv_.refs(n.block) == 1 ? 1 : 0;
  return idle;
}

}  // namespace ninfer
