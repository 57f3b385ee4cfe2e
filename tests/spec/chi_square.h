// Owns the spec tests' statistics: chi-square goodness-of-fit and two-sample homogeneity with a stated
// false-failure probability (Wilson–Hilferty quantile).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

namespace ninfer::testing {

// Upper quantile of the chi-square distribution with `df` degrees of freedom for the standard normal quantile z
// (z = 4.753 → tail 1e-6; z = 3.719 → 1e-4). Wilson–Hilferty, accurate to a few percent for df ≥ 1.
inline double chi2_quantile(int64_t df, double z) {
  const double d = static_cast<double>(df), a = 2.0 / (9.0 * d);
  return d * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

struct ChiSquare {
  double stat = 0;
  int64_t df = 0;
  bool ok(double z) const { return df == 0 || stat <= chi2_quantile(df, z); }
};

// Observed counts against probabilities p (Σp = 1). Bins with expected count < 5 are pooled into one.
// A count in a bin with p == 0 makes the statistic infinite.
inline ChiSquare goodness_of_fit(const std::vector<int64_t>& counts, const std::vector<double>& p) {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  ChiSquare r;
  double pooled_e = 0, pooled_o = 0;
  int64_t bins = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double e = p[i] * static_cast<double>(n);
    if (p[i] == 0.0 && counts[i] > 0) r.stat = INFINITY;
    if (e < 5) {
      pooled_e += e, pooled_o += static_cast<double>(counts[i]);
      continue;
    }
    r.stat += (counts[i] - e) * (counts[i] - e) / e;
    ++bins;
  }
  if (pooled_e >= 5) r.stat += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e, ++bins;
  r.df = std::max<int64_t>(bins - 1, 0);
  return r;
}

// Are two samples of categories drawn from the same distribution? 2 × C contingency table; categories whose pooled
// expected count is < 5 in either row are merged into one.
inline ChiSquare homogeneity(const std::map<int64_t, int64_t>& a, const std::map<int64_t, int64_t>& b) {
  std::map<int64_t, std::pair<double, double>> cells;
  double na = 0, nb = 0;
  for (auto [k, c] : a) cells[k].first += c, na += c;
  for (auto [k, c] : b) cells[k].second += c, nb += c;
  const double n = na + nb;
  std::vector<std::pair<double, double>> cols;
  std::pair<double, double> rest{0, 0};
  for (auto [k, ab] : cells) {
    const double t = ab.first + ab.second;
    if (t * std::min(na, nb) / n < 5) rest.first += ab.first, rest.second += ab.second;
    else cols.push_back(ab);
  }
  if (rest.first + rest.second > 0) cols.push_back(rest);
  ChiSquare r;
  for (auto [oa, ob] : cols) {
    const double t = oa + ob, ea = t * na / n, eb = t * nb / n;
    r.stat += (oa - ea) * (oa - ea) / ea + (ob - eb) * (ob - eb) / eb;
  }
  r.df = std::max<int64_t>(static_cast<int64_t>(cols.size()) - 1, 0);
  return r;
}

}  // namespace ninfer::testing
