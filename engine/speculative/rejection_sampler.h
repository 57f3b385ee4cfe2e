// Owns speculative rejection sampling: accept a drafted token with probability min(1, p/q), else resample from the
// residual max(0, p − q), so the committed tokens follow the target distribution p exactly (docs/speculative.md).
#pragma once

#include <cstdint>
#include <random>
#include <span>

namespace ninfer {

// A sparse token distribution: ids[i] carries weight weights[i] ≥ 0 (unnormalised), total = Σ weights.
// Ids not listed have probability 0.
struct TokenDist {
  std::span<const int32_t> ids;
  std::span<const double> weights;
  double total = 0;
  double weight_of(int32_t id) const;
};

// A token drawn from p: u ~ U[0, total), the first id whose cumulative weight exceeds u (the last one on rounding).
int32_t sample_token(const TokenDist& p, std::mt19937_64& rng);

struct DraftVerdict {
  bool accepted = false;
  int32_t token = 0;  // the draft when accepted, else the replacement drawn from the residual
};

// One-hot proposal q = δ(draft) (every drafter here drafts deterministically): accept with probability p(draft), else
// draw from p with draft removed, renormalised. Exactly p in distribution.
DraftVerdict verify_one_hot(const TokenDist& p, int32_t draft, std::mt19937_64& rng);

// The general rule for a proposal q the draft was sampled from. p, q dense over the vocabulary, each summing to 1
// (up to rounding); q[draft] must be > 0. Accept with probability min(1, p[d] / q[d]), else draw from
// normalise(max(0, p − q)). Throws Error(kInvalidArgument) on mismatched sizes or q[draft] == 0.
DraftVerdict verify_draft(std::span<const double> p, std::span<const double> q, int32_t draft, std::mt19937_64& rng);

}  // namespace ninfer
