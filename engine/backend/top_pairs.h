// Owns the order of Backend::top_k_rows's (value, index) pairs: one total order over a row's entries, so that the
// k best are the same set in the same order however the row is split (across threads, blocks or tensor-parallel
// ranks) and merged. kernels/sampling/top_k.cu keeps the device copy of this rule.
#pragma once

#include <cmath>
#include <cstdint>

namespace ninfer {

// Whether entry (va, ia) comes before (vb, ib): a number before NaN; of two numbers the larger, equal ones (−0 == +0)
// by lower index; of two NaN the lower index. The host sampler's order (Sampler::distribution: by logit, ties by id)
// wherever the row holds no NaN.
inline bool top_pair_before(float va, int64_t ia, float vb, int64_t ib) {
  const bool na = std::isnan(va), nb = std::isnan(vb);
  if (na != nb) return nb;
  if (!na && va != vb) return va > vb;
  return ia < ib;
}

}  // namespace ninfer
