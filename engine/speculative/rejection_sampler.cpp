// Speculative rejection sampling (one-hot and general proposals) and the plain draw both share.
#include "engine/speculative/rejection_sampler.h"

#include <algorithm>

#include "engine/core/error.h"

namespace ninfer {

double TokenDist::weight_of(int32_t id) const {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == id) return weights[i];
  return 0.0;
}

int32_t sample_token(const TokenDist& p, std::mt19937_64& rng) {
  if (p.ids.empty()) fail(ErrorKind::kInternal, "sample_token: empty distribution");
  const double u = std::uniform_real_distribution<double>(0.0, p.total)(rng);
  size_t pick = 0;
  const size_t n = p.ids.size();
  for (double acc = p.weights[0]; pick + 1 < n && acc <= u; acc += p.weights[++pick]) {}
  return p.ids[pick];
}

DraftVerdict verify_one_hot(const TokenDist& p, int32_t draft, std::mt19937_64& rng) {
  const double wd = p.weight_of(draft);
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  if (u * p.total < wd) return {true, draft};
  // Residual: p without the draft. It has mass, since the draft was rejected with probability 1 − p(draft) > 0.
  const double rest = p.total - wd;
  double v = std::uniform_real_distribution<double>(0.0, rest)(rng), acc = 0.0;
  int32_t last = -1;
  for (size_t i = 0; i < p.ids.size(); ++i) {
    if (p.ids[i] == draft || p.weights[i] <= 0.0) continue;
    last = p.ids[i];
    acc += p.weights[i];
    if (v < acc) return {false, last};
  }
  if (last < 0) fail(ErrorKind::kInternal, "verify_one_hot: draft {} rejected but p has no other token", draft);
  return {false, last};  // rounding at the top end
}

DraftVerdict verify_draft(std::span<const double> p, std::span<const double> q, int32_t draft, std::mt19937_64& rng) {
  if (p.size() != q.size())
    fail(ErrorKind::kInvalidArgument, "verify_draft: p has {} entries, q {}", p.size(), q.size());
  if (draft < 0 || static_cast<size_t>(draft) >= p.size() || !(q[static_cast<size_t>(draft)] > 0.0))
    fail(ErrorKind::kInvalidArgument, "verify_draft: draft {} has no proposal probability (vocab {})", draft, p.size());
  const double pd = p[static_cast<size_t>(draft)], qd = q[static_cast<size_t>(draft)];
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  if (u * qd < pd) return {true, draft};
  double rest = 0.0;
  for (size_t i = 0; i < p.size(); ++i) rest += std::max(0.0, p[i] - q[i]);
  if (!(rest > 0.0)) return {true, draft};  // p ≤ q everywhere means p == q: nothing to correct (rounding only)
  const double v = std::uniform_real_distribution<double>(0.0, rest)(rng);
  double acc = 0.0;
  int32_t last = draft;
  for (size_t i = 0; i < p.size(); ++i) {
    const double r = std::max(0.0, p[i] - q[i]);
    if (r <= 0.0) continue;
    last = static_cast<int32_t>(i);
    acc += r;
    if (v < acc) return {false, last};
  }
  return {false, last};
}

}  // namespace ninfer
