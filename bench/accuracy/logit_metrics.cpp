#include "bench/accuracy/logit_metrics.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"

namespace ninfer::bench {

void to_distribution(std::span<const float> logits, Distribution& out, const char* what) {
  if (logits.empty()) fail(ErrorKind::kInvalidArgument, "{}: empty logit row", what);
  const size_t n = logits.size();
  out.logp.resize(n), out.p.resize(n);
  double m = logits[0];
  size_t arg = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(logits[i])) fail(ErrorKind::kInvalidArgument, "{}: logit {} is {}", what, i, logits[i]);
    if (logits[i] > m) m = logits[i], arg = i;
  }
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - m);
  const double lse = m + std::log(sum);
  double second = -1;
  for (size_t i = 0; i < n; ++i) {
    out.logp[i] = static_cast<double>(logits[i]) - lse;
    out.p[i] = std::exp(out.logp[i]);
    if (i != arg) second = std::max(second, out.p[i]);
  }
  out.argmax = static_cast<int32_t>(arg);
  out.margin = second < 0 ? 1.0 : out.p[arg] - second;
}

PositionMetrics compare(const Distribution& base, const Distribution& variant, int32_t target) {
  if (base.logp.size() != variant.logp.size())
    fail(ErrorKind::kInvalidArgument, "compare: vocabularies differ ({} vs {})", base.logp.size(), variant.logp.size());
  PositionMetrics r;
  double kl = 0;
  for (size_t i = 0; i < base.logp.size(); ++i)
    if (base.p[i] > 0) kl += base.p[i] * (base.logp[i] - variant.logp[i]);
  r.kl = std::max(kl, 0.0);  // ≥ 0 in exact arithmetic; summation can leave −1e-17 for identical rows
  r.top1_agree = base.argmax == variant.argmax;
  r.base_margin = base.margin;
  if (target >= 0) {
    if (static_cast<size_t>(target) >= base.logp.size())
      fail(ErrorKind::kInvalidArgument, "compare: target {} is outside the vocabulary [0, {})", target, base.logp.size());
    r.nll_base = -base.logp[static_cast<size_t>(target)];
    r.nll_variant = -variant.logp[static_cast<size_t>(target)];
    r.base_correct = base.argmax == target;
    r.variant_correct = variant.argmax == target;
  }
  return r;
}

void MetricAccumulator::add(const PositionMetrics& m, bool has_target) {
  kl_.push_back(m.kl);
  agree_ += m.top1_agree;
  if (!m.top1_agree) flip_margin_.push_back(m.base_margin);
  if (has_target) {
    ++targets_;
    nll_base_ += m.nll_base, nll_variant_ += m.nll_variant;
    base_correct_ += m.base_correct, variant_correct_ += m.variant_correct;
  }
}

MetricSummary MetricAccumulator::summary() const {
  MetricSummary s;
  s.positions = static_cast<int64_t>(kl_.size());
  s.targets = targets_;
  if (kl_.empty()) return s;
  double sum = 0;
  for (double v : kl_) sum += v;
  s.kl_mean = sum / static_cast<double>(kl_.size());
  s.kl_p50 = percentile(kl_, 50), s.kl_p95 = percentile(kl_, 95), s.kl_p99 = percentile(kl_, 99);
  s.kl_max = *std::max_element(kl_.begin(), kl_.end());
  s.top1_agreement = static_cast<double>(agree_) / static_cast<double>(kl_.size());
  s.flips = static_cast<int64_t>(flip_margin_.size());
  if (!flip_margin_.empty()) {
    s.flip_margin_p50 = percentile(flip_margin_, 50);
    s.flip_margin_max = *std::max_element(flip_margin_.begin(), flip_margin_.end());
  }
  if (targets_ > 0) {
    const double t = static_cast<double>(targets_);
    s.ppl_base = std::exp(nll_base_ / t), s.ppl_variant = std::exp(nll_variant_ / t);
    s.acc_base = static_cast<double>(base_correct_) / t, s.acc_variant = static_cast<double>(variant_correct_) / t;
  }
  return s;
}

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = q / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

}  // namespace ninfer::bench
