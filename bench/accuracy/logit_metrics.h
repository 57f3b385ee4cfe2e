// Owns the accuracy benchmark's metrics: a logit row as a distribution, KL / top-1 / NLL of one position, summaries.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ninfer::bench {

// One logit row as a probability distribution, in double: logp = x − logsumexp(x), p = exp(logp).
struct Distribution {
  std::vector<double> logp, p;
  int32_t argmax = 0;  // the lowest index among the largest logits (torch.argmax's tie rule)
  double margin = 0;   // p[argmax] − the second largest p (0 for a tie; 1 for a one-entry row)
};

// Fills `out` from `logits` (one row). Throws Error(kInvalidArgument) for an empty row or a non-finite logit,
// naming `what` (model / variant / position) and the index.
void to_distribution(std::span<const float> logits, Distribution& out, const char* what = "logits");

// What one position contributes. `target` < 0: no next token is known (NLL is not counted).
struct PositionMetrics {
  double kl = 0;              // KL(p_base || p_variant) = Σ p_base · (log p_base − log p_variant), nats
  bool top1_agree = false;    // argmax(base) == argmax(variant)
  double base_margin = 0;     // the reference's top-1 − top-2 probability gap at this position
  double nll_base = 0, nll_variant = 0;  // −log p(target)
  bool base_correct = false, variant_correct = false;  // argmax == target
};

PositionMetrics compare(const Distribution& base, const Distribution& variant, int32_t target);

// Aggregate over positions. Percentiles interpolate linearly between order statistics (numpy.percentile's default).
struct MetricSummary {
  int64_t positions = 0, targets = 0;
  double kl_mean = 0, kl_p50 = 0, kl_p95 = 0, kl_p99 = 0, kl_max = 0;
  double top1_agreement = 0;          // fraction of positions, 0..1
  double ppl_base = 0, ppl_variant = 0;  // exp(mean NLL) over the positions with a target
  double acc_base = 0, acc_variant = 0;  // top-1 accuracy against the text, over the positions with a target
  // The reference's top-1 − top-2 probability gap where the top-1 changed: how close to a tie the flips were.
  int64_t flips = 0;
  double flip_margin_p50 = 0, flip_margin_max = 0;
};

class MetricAccumulator {
 public:
  void add(const PositionMetrics& m, bool has_target);
  MetricSummary summary() const;

 private:
  std::vector<double> kl_, flip_margin_;
  int64_t agree_ = 0, targets_ = 0, base_correct_ = 0, variant_correct_ = 0;
  double nll_base_ = 0, nll_variant_ = 0;
};

// The q-th percentile (0..100) of `values` with linear interpolation; `values` need not be sorted. Empty: 0.
double percentile(std::vector<double> values, double q);

}  // namespace ninfer::bench
