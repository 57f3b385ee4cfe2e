// Owns the work plan of paged attention: which query vectors of which sequence each CTA takes over which key range
// (split-K when a step has too few tiles to fill the device), and where split results are combined. One function,
// compiled for the host (the launch bounds, the tests) and for the device (attention_plan_kernel writes a step's plan
// from its q_start / seq_len already on the device), so that a step recorded in a CUDA graph plans its own work at
// every replay and an eager launch does exactly the same.
#pragma once

#include <cstdint>

#include "kernels/common/kview.h"

namespace ninfer::kern {

// Work item (kAttnItemInts int32 each): sequence s, its first query vector v0 and count nv (≤ m), the key range
// [kb, ke), part (−1: write `out` directly; else the partial slot this split writes), pos0 = the position of the
// sequence's first new row (seq_len − n_new), row0 = q_start[s].
constexpr int kAttnItemInts = 8;
// Combine entry (kAttnCombineInts int32 each): a tile split over ns items whose partial slots are part0 …
// part0 + ns − 1: v0, nv, part0, ns, row0.
constexpr int kAttnCombineInts = 5;
constexpr int kAttnSplitAlign = 64;  // split ranges are multiples of this many keys

// What a plan depends on besides the step's data: the shape of the launch.
struct AttnPlanShape {
  int32_t S = 0;         // sequences (q_start has S + 1 entries, seq_len S)
  int32_t G = 1;         // query heads per kv head
  int32_t M = 1;         // query vectors per tile (AttnConfig::m())
  int32_t n_kv = 1;      // kv heads (CTAs per item)
  int64_t target = 1;    // CTAs one wave of the device holds: fewer tiles × n_kv than this are split over keys
  int32_t min_split = 256;  // the shortest key range a split takes
};

struct AttnPlanCounts {
  int32_t items = 0, combine = 0, slots = 0;
};

// Tiles of the step: ceil(n_new · G / M) per sequence. Depends on q_start only (the shape of the step).
NINFER_HD int64_t attention_plan_tiles(const int32_t* q_start, const AttnPlanShape& p) {
  int64_t tiles = 0;
  for (int32_t s = 0; s < p.S; ++s) {
    const int64_t nvec = static_cast<int64_t>(q_start[s + 1] - q_start[s]) * p.G;
    tiles += (nvec + p.M - 1) / p.M;
  }
  return tiles;
}

// Upper bounds of attention_plan's counts for a step of `tiles` tiles, whatever its sequence lengths. Whether the
// step splits depends on `tiles` alone: unsplit, one item per tile and no partials; split, Σ ceil(key_end / split_len)
// ≤ Σ key_end / split_len + tiles ≤ target / n_kv + tiles items (split_len ≥ Σ key_end · n_kv / target), each with a
// partial slot, and at most one combine entry per tile.
NINFER_HD AttnPlanCounts attention_plan_bounds(int64_t tiles, const AttnPlanShape& p) {
  AttnPlanCounts b;
  if (tiles * p.n_kv >= p.target) {
    b.items = static_cast<int32_t>(tiles);
    return b;
  }
  b.items = static_cast<int32_t>(tiles + p.target / p.n_kv + 1);
  b.combine = static_cast<int32_t>(tiles);
  b.slots = b.items;
  return b;
}

// Writes the plan (items: counts.items × kAttnItemInts, combine: counts.combine × kAttnCombineInts) and returns its
// counts. Tiles of up to M query vectors of one sequence (vectors numbered row-major, v = row · G + g); a tile attends
// to keys [0, key_end) with key_end = the last row's position + 1. When tiles × n_kv < target, every tile is split into
// ranges of split_len keys (≥ min_split, a multiple of kAttnSplitAlign) sized so that the splits fill one wave.
// `cap` bounds what is written (attention_plan_bounds); the counts returned may exceed it only if the bound is wrong.
NINFER_HD AttnPlanCounts attention_plan(const int32_t* q_start, const int32_t* seq_len, const AttnPlanShape& p,
                                        AttnPlanCounts cap, int32_t* items, int32_t* combine) {
  int64_t tiles = 0, total_keys = 0;
  for (int32_t s = 0; s < p.S; ++s) {
    const int32_t n_new = q_start[s + 1] - q_start[s];
    const int32_t pos0 = seq_len[s] - n_new;
    const int64_t nvec = static_cast<int64_t>(n_new) * p.G;
    for (int64_t v0 = 0; v0 < nvec; v0 += p.M) {
      const int64_t nv = nvec - v0 < p.M ? nvec - v0 : p.M;
      total_keys += pos0 + (v0 + nv - 1) / p.G + 1;
      ++tiles;
    }
  }
  int64_t split_len = INT32_MAX;
  if (tiles * p.n_kv < p.target) {
    const int64_t per = (total_keys * p.n_kv + p.target - 1) / p.target;
    const int64_t aligned = (per + kAttnSplitAlign - 1) / kAttnSplitAlign * kAttnSplitAlign;
    split_len = aligned > p.min_split ? aligned : p.min_split;
  }
  AttnPlanCounts n;
  auto item = [&](int32_t s, int32_t v0, int32_t nv, int32_t kb, int32_t ke, int32_t part, int32_t pos0,
                  int32_t row0) {
    if (n.items < cap.items) {
      int32_t* it = items + static_cast<int64_t>(n.items) * kAttnItemInts;
      it[0] = s, it[1] = v0, it[2] = nv, it[3] = kb, it[4] = ke, it[5] = part, it[6] = pos0, it[7] = row0;
    }
    ++n.items;
  };
  for (int32_t s = 0; s < p.S; ++s) {
    const int32_t row0 = q_start[s];
    const int32_t n_new = q_start[s + 1] - row0;
    const int32_t pos0 = seq_len[s] - n_new;
    const int64_t nvec = static_cast<int64_t>(n_new) * p.G;
    for (int64_t v = 0; v < nvec; v += p.M) {
      const auto v0 = static_cast<int32_t>(v);
      const auto nv = static_cast<int32_t>(nvec - v < p.M ? nvec - v : p.M);
      const auto key_end = static_cast<int32_t>(pos0 + (v + nv - 1) / p.G + 1);
      const int64_t ns = (key_end + split_len - 1) / split_len;
      if (ns <= 1) {
        item(s, v0, nv, 0, key_end, -1, pos0, row0);
        continue;
      }
      for (int64_t i = 0; i < ns; ++i) {
        const auto kb = static_cast<int32_t>(i * split_len);
        const int64_t end = (i + 1) * split_len;
        item(s, v0, nv, kb, static_cast<int32_t>(end < key_end ? end : key_end), n.slots + static_cast<int32_t>(i),
             pos0, row0);
      }
      if (n.combine < cap.combine) {
        int32_t* c = combine + static_cast<int64_t>(n.combine) * kAttnCombineInts;
        c[0] = v0, c[1] = nv, c[2] = n.slots, c[3] = static_cast<int32_t>(ns), c[4] = row0;
      }
      ++n.combine;
      n.slots += static_cast<int32_t>(ns);
    }
  }
  return n;
}

}  // namespace ninfer::kern
