// Owns the order of Backend::top_k_rows's (value, index) pairs: one total order over a row's entries, so that the
// k best are the same set in the same order however the row is split (across threads, blocks or tensor-parallel
// ranks) and merged. kernels/sampling/top_k.cu keeps the device copy of this rule.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <utility>
#include <vector>

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

// The k first of the entries pushed so far, in top_pair_before order: a bounded insertion list (most entries of a
// long row fail the one comparison with the last one kept). Backend::top_k_rows's CPU op over a row's columns, and
// the merge of the ranks' pairs (merge_top_pairs) over their union.
class TopPairs {
 public:
  explicit TopPairs(size_t k) : k_(k) { kept_.reserve(k); }
  void clear() { kept_.clear(); }
  void push(float v, int64_t i) {
    if (kept_.size() == k_) {
      if (!top_pair_before(v, i, kept_.back().first, kept_.back().second)) return;
      kept_.pop_back();
    }
    auto at = kept_.end();  // from the back: most entries that get here land near the end
    while (at != kept_.begin() && top_pair_before(v, i, std::prev(at)->first, std::prev(at)->second)) --at;
    kept_.insert(at, {v, i});
  }
  // out [k, 2] = the kept (value, index as an exact f32) pairs in order, (NaN, −1) past them.
  void write(float* out) const {
    for (size_t j = 0; j < k_; ++j) {
      const bool some = j < kept_.size();
      out[2 * j] = some ? kept_[j].first : std::numeric_limits<float>::quiet_NaN();
      out[2 * j + 1] = some ? static_cast<float>(kept_[j].second) : -1.0f;
    }
  }

 private:
  size_t k_;
  std::vector<std::pair<float, int64_t>> kept_;
};

}  // namespace ninfer
