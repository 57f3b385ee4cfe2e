// Owns the tests of the accuracy benchmark's metrics (bench/accuracy/logit_metrics) against torch/numpy goldens.
#include <cmath>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bench/accuracy/logit_metrics.h"
#include "engine/core/error.h"

namespace ninfer::bench {
namespace {

nlohmann::json fixture() {
  std::ifstream in(std::string(NINFER_TEST_DATA) + "/accuracy/metrics.json");
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(in);
}

std::vector<float> floats(const nlohmann::json& a) {
  std::vector<float> v;
  for (const auto& x : a) v.push_back(static_cast<float>(x.get<double>()));
  return v;
}

void expect_rel(double got, double want, double rel, const std::string& what) {
  EXPECT_NEAR(got, want, rel * std::max(1.0, std::fabs(want))) << what;
}

TEST(LogitMetrics, IdenticalAndShiftedRowsHaveZeroKlAndAgree) {
  const std::vector<float> a = {0.25f, -3.0f, 7.5f, 7.0f, 0.125f};
  std::vector<float> b = a;
  for (float& x : b) x += 16.0f;  // a constant shift (exact in f32) is the same distribution
  Distribution p, q;
  to_distribution(a, p);
  to_distribution(b, q);
  for (const auto* d : {&p, &q}) {
    double sum = 0;
    for (double x : d->p) sum += x;
    EXPECT_NEAR(sum, 1.0, 1e-14);
    EXPECT_EQ(d->argmax, 2);
  }
  const PositionMetrics same = compare(p, p, 3);
  EXPECT_EQ(same.kl, 0.0);
  EXPECT_TRUE(same.top1_agree);
  EXPECT_EQ(same.nll_base, same.nll_variant);
  const PositionMetrics shifted = compare(p, q, 3);
  EXPECT_NEAR(shifted.kl, 0.0, 1e-15);
  EXPECT_TRUE(shifted.top1_agree);
  EXPECT_NEAR(shifted.nll_base, shifted.nll_variant, 1e-12);
}

TEST(LogitMetrics, TwoWayPairByHand) {
  // p = (½, ½), q = (¼, ¾): KL = ½·log(½/¼) + ½·log(½/¾) = ½·log(4/3); argmax(p) = 0 (tie: lowest index), argmax(q) = 1.
  Distribution p, q;
  to_distribution(std::vector<float>{0.0f, 0.0f}, p);
  to_distribution(std::vector<float>{0.0f, std::log(3.0f)}, q);
  const double kl = 0.5 * std::log(0.5 / 0.25) + 0.5 * std::log(0.5 / (1.0 - 0.25));
  EXPECT_NEAR(compare(p, q, 1).kl, kl, 1e-7);  // q is (¼, ¾) to f32 rounding of log 3
  EXPECT_NEAR(kl, 0.5 * std::log(4.0 / 3.0), 1e-15);
  EXPECT_FALSE(compare(p, q, 1).top1_agree);
  EXPECT_NEAR(compare(p, q, 1).nll_variant, -std::log(0.75), 1e-7);
}

TEST(LogitMetrics, PairsMatchTorch) {
  const auto j = fixture();
  ASSERT_GE(j["pairs"].size(), 8u);
  for (const auto& c : j["pairs"]) {
    const std::string name = c["name"];
    Distribution p, q;
    to_distribution(floats(c["ref"]), p);
    to_distribution(floats(c["variant"]), q);
    EXPECT_EQ(p.argmax, c["argmax_ref"].get<int>()) << name;
    EXPECT_EQ(q.argmax, c["argmax_variant"].get<int>()) << name;
    expect_rel(p.margin, c["margin_ref"].get<double>(), 1e-12, name + " margin");
    const PositionMetrics m = compare(p, q, c["target"].get<int>());
    expect_rel(m.kl, c["kl"].get<double>(), 1e-12, name + " kl");
    EXPECT_EQ(m.top1_agree, c["top1_agree"].get<bool>()) << name;
    expect_rel(m.nll_base, c["nll_ref"].get<double>(), 1e-12, name + " nll_ref");
    expect_rel(m.nll_variant, c["nll_variant"].get<double>(), 1e-12, name + " nll_variant");
  }
}

TEST(LogitMetrics, SummaryMatchesNumpy) {
  const auto j = fixture();
  MetricAccumulator acc;
  for (const auto& c : j["pairs"]) {
    Distribution p, q;
    to_distribution(floats(c["ref"]), p);
    to_distribution(floats(c["variant"]), q);
    acc.add(compare(p, q, c["target"].get<int>()), true);
  }
  const MetricSummary s = acc.summary();
  const auto& w = j["summary"];
  EXPECT_EQ(s.positions, w["positions"].get<int64_t>());
  EXPECT_EQ(s.targets, s.positions);
  expect_rel(s.kl_mean, w["kl_mean"], 1e-12, "kl_mean");
  expect_rel(s.kl_p50, w["kl_p50"], 1e-12, "kl_p50");
  expect_rel(s.kl_p95, w["kl_p95"], 1e-12, "kl_p95");
  expect_rel(s.kl_p99, w["kl_p99"], 1e-12, "kl_p99");
  expect_rel(s.kl_max, w["kl_max"], 1e-12, "kl_max");
  EXPECT_DOUBLE_EQ(s.top1_agreement, w["top1_agreement"].get<double>());
  expect_rel(s.ppl_base, w["ppl_ref"], 1e-10, "ppl_ref");
  expect_rel(s.ppl_variant, w["ppl_variant"], 1e-10, "ppl_variant");
  EXPECT_DOUBLE_EQ(s.acc_base, w["acc_ref"].get<double>());
  EXPECT_DOUBLE_EQ(s.acc_variant, w["acc_variant"].get<double>());
  EXPECT_EQ(s.flips, w["flips"].get<int64_t>());
  expect_rel(s.flip_margin_p50, w["flip_margin_p50"], 1e-12, "flip_margin_p50");
  expect_rel(s.flip_margin_max, w["flip_margin_max"], 1e-12, "flip_margin_max");
}

TEST(LogitMetrics, PercentileInterpolatesLinearly) {
  EXPECT_EQ(percentile({}, 50), 0.0);
  EXPECT_EQ(percentile({4.0}, 95), 4.0);
  EXPECT_DOUBLE_EQ(percentile({3.0, 1.0, 2.0, 4.0}, 50), 2.5);  // unsorted input
  EXPECT_DOUBLE_EQ(percentile({0.0, 10.0}, 95), 9.5);
  EXPECT_DOUBLE_EQ(percentile({0.0, 10.0, 20.0}, 100), 20.0);
}

TEST(LogitMetrics, RejectsNonFiniteLogitsAndBadTargets) {
  Distribution p;
  const std::vector<float> nan_row = {0.0f, NAN, 1.0f};
  EXPECT_THROW(to_distribution(nan_row, p, "w4a4 row 3"), Error);
  try {
    to_distribution(nan_row, p, "w4a4 row 3");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("w4a4 row 3: logit 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(to_distribution(std::vector<float>{}, p), Error);
  const std::vector<float> inf_row = {INFINITY, 0.0f};
  EXPECT_THROW(to_distribution(inf_row, p), Error);
  Distribution a, b;
  to_distribution(std::vector<float>{1.0f, 2.0f}, a);
  to_distribution(std::vector<float>{1.0f, 2.0f, 3.0f}, b);
  EXPECT_THROW(compare(a, b, 0), Error);
  EXPECT_THROW(compare(a, a, 2), Error);
  const PositionMetrics no_target = compare(a, a, -1);
  EXPECT_EQ(no_target.nll_base, 0.0);
}

}  // namespace
}  // namespace ninfer::bench
