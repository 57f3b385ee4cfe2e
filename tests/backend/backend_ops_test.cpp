// Every CPU backend op against the plain double-precision references in ref_ops.h, for every backend config.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

#include "tests/backend/ref_ops.h"
#include "tests/backend/test_util.h"

namespace ninfer::testing {
namespace {

class BackendOps : public ::testing::TestWithParam<BackendConfig> {
 protected:
  void SetUp() override { be = make_cpu_backend(GetParam().options); }
  std::unique_ptr<Backend> be;
  std::mt19937 rng{42};
};

constexpr DType kWeightDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};

TEST_P(BackendOps, LinearAllWeightDtypes) {
  struct Shape {
    int64_t M, N, K;
  };
  for (DType dt : kWeightDtypes)
    for (Shape s : {Shape{1, 37, 67}, Shape{2, 64, 128}, Shape{5, 9, 300}, Shape{8, 33, 96}, Shape{19, 50, 40},
                    Shape{1, 1, 1}, Shape{3, 130, 7}}) {
      for (bool acc : {false, true}) {
        SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " M=" << s.M << " N=" << s.N << " K=" << s.K
                                          << " acc=" << acc);
        HostTensor x = random_tensor({s.M, s.K}, rng);
        HostTensor w = random_tensor({s.N, s.K}, rng, -1, 1, dt);
        HostTensor y = random_tensor({s.M, s.N}, rng);
        ref::Vec want = ref::linear(x.values, w.values, s.M, s.N, s.K);
        if (acc)
          for (size_t i = 0; i < want.size(); ++i) want[i] += y.values[i];
        be->linear(y.view(), x.view(), w.view(), acc);
        EXPECT_LT(rel_err(y.values, want), 2e-6);
      }
    }
}

TEST_P(BackendOps, LinearStridedRows) {
  // x rows padded (row stride 80 for K = 64), y written into the second half of [M, 2N] rows
  const int64_t M = 11, N = 24, K = 64;
  HostTensor xbig = random_tensor({M, 80}, rng);
  HostTensor w = random_tensor({N, K}, rng, -1, 1, DType::kBF16);
  HostTensor ybig({M, 2 * N});
  Tensor x = Tensor::strided(xbig.values.data(), DType::kF32, {M, K}, {80, 1});
  Tensor y = Tensor::strided(ybig.values.data() + N, DType::kF32, {M, N}, {2 * N, 1});
  be->linear(y, x, w.view());
  std::vector<float> xc;
  for (int64_t m = 0; m < M; ++m) xc.insert(xc.end(), xbig.values.begin() + m * 80, xbig.values.begin() + m * 80 + K);
  const ref::Vec want = ref::linear(xc, w.values, M, N, K);
  std::vector<float> got;
  for (int64_t m = 0; m < M; ++m) {
    got.insert(got.end(), ybig.values.begin() + m * 2 * N + N, ybig.values.begin() + (m + 1) * 2 * N);
    for (int64_t n = 0; n < N; ++n) EXPECT_EQ(ybig.values[static_cast<size_t>(m * 2 * N + n)], 0.0f);
  }
  EXPECT_LT(rel_err(got, want), 2e-6);
}

TEST_P(BackendOps, LinearRejectsBadShapesAndAliasing) {
  HostTensor x = random_tensor({3, 16}, rng), w = random_tensor({16, 16}, rng), y({3, 8});
  EXPECT_THROW(be->linear(y.view(), x.view(), w.view()), Error);      // N mismatch
  EXPECT_THROW(be->linear(x.view(), x.view(), w.view()), Error);      // y aliases x
  HostTensor wi({16, 16}, DType::kI8);
  EXPECT_THROW(be->linear(x.view(), x.view(), wi.view()), Error);     // unsupported weight dtype
}

TEST_P(BackendOps, EmbeddingAndGatherRows) {
  for (DType dt : kWeightDtypes) {
    HostTensor table = random_tensor({50, 24}, rng, -2, 2, dt);
    const std::vector<int32_t> ids{3, 0, 49, 3, 17};
    HostTensor y({5, 24});
    be->embedding(y.view(), table.view(), ids);
    for (size_t t = 0; t < ids.size(); ++t)
      for (int64_t i = 0; i < 24; ++i)
        ASSERT_EQ(y.values[t * 24 + static_cast<size_t>(i)], table.values[static_cast<size_t>(ids[t] * 24 + i)]);
    HostTensor g({2, 24});
    const std::vector<int32_t> rows{4, 1};
    be->gather_rows(g.view(), y.view(), rows);
    for (size_t r = 0; r < 2; ++r)
      for (size_t i = 0; i < 24; ++i) ASSERT_EQ(g.values[r * 24 + i], y.values[static_cast<size_t>(rows[r]) * 24 + i]);
  }
  HostTensor table = random_tensor({50, 24}, rng);
  HostTensor y({1, 24});
  const std::vector<int32_t> bad{50};
  EXPECT_THROW(be->embedding(y.view(), table.view(), bad), Error);
}

// argmax_rows is std::max_element per row: the first maximum, NaN passed over unless it is the first element.
// The expected indices below are written from that definition (independent of any implementation).
TEST_P(BackendOps, ArgmaxRowsIsTheFirstMaximum) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<std::pair<std::vector<float>, int32_t>> cases = {
      {{1, 3, 2}, 1},
      {{5, 5, 5}, 0},                 // ties: the lower index
      {{1, 4, 4, 2}, 1},
      {{-inf, -inf, -inf}, 0},        // all masked
      {{-inf, -2, -inf, -2}, 1},
      {{nan, 9, 10}, 0},              // NaN first: max_element never leaves it
      {{1, nan, 3, nan}, 2},          // NaN elsewhere: never chosen
      {{-inf, nan, nan}, 0},
      {{2, nan, inf, inf}, 2},
      {{-0.0f, 0.0f}, 0},             // -0 == +0: a tie
      {{7}, 0},
  };
  for (const auto& [row, want] : cases) {
    HostTensor x({1, static_cast<int64_t>(row.size())});
    x.values = row;
    std::vector<int32_t> got(1, -1);
    be->argmax_rows(got, x.view());
    EXPECT_EQ(got[0], want) << "row of " << row.size();
  }
  // Rows at a stride (padding that would win, were it read) and long rows against std::max_element.
  for (int64_t V : {1, 33, 1000, 151936}) {
    const int64_t R = 5, stride = V + 7;
    std::vector<float> buf(static_cast<size_t>(R * stride), 1e30f);
    std::uniform_real_distribution<float> u(-4.0f, 4.0f);
    std::vector<int32_t> want(static_cast<size_t>(R));
    for (int64_t r = 0; r < R; ++r) {
      float* row = buf.data() + r * stride;
      for (int64_t k = 0; k < V; ++k) row[k] = std::round(u(rng) * 4) / 4;  // coarse values: many ties
      want[static_cast<size_t>(r)] = static_cast<int32_t>(std::max_element(row, row + V) - row);
    }
    std::vector<int32_t> got(static_cast<size_t>(R), -1);
    be->argmax_rows(got, Tensor::strided(buf.data(), DType::kF32, {R, V}, {stride, 1}, Device::kCpu));
    EXPECT_EQ(got, want) << "V=" << V;
  }
  HostTensor x({2, 4});
  std::vector<int32_t> one(1);
  EXPECT_THROW(be->argmax_rows(one, x.view()), Error);  // ids for 1 row, x has 2
  HostTensor empty({2, 0});
  std::vector<int32_t> two(2);
  EXPECT_THROW(be->argmax_rows(two, empty.view()), Error);  // no element to choose
}

// mask_columns sets the disallowed columns of every row to -inf and leaves every other element's bits alone (NaN and
// +inf included), rows at a stride with their padding untouched.
TEST_P(BackendOps, MaskColumnsSetsTheDisallowedToMinusInfinity) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const int64_t R = 3, V = 6, stride = 8;
  std::vector<float> buf = {1, nan, 3, inf, -2, 0.5f, 77, 77,  //
                            nan, 2, -inf, 4, 5, -0.0f, 77, 77,  //
                            9, 8, 7, 6, 5, 4, 77, 77};
  const std::vector<int8_t> allowed = {1, 0, 1, 0, 1, 0};
  be->mask_columns(Tensor::strided(buf.data(), DType::kF32, {R, V}, {stride, 1}, Device::kCpu),
                   Tensor::make(const_cast<int8_t*>(allowed.data()), DType::kI8, {V}, Device::kCpu));
  const std::vector<float> want = {1, -inf, 3, -inf, -2, -inf, 77, 77,  //
                                   nan, -inf, -inf, -inf, 5, -inf, 77, 77,  //
                                   9, -inf, 7, -inf, 5, -inf, 77, 77};
  for (size_t i = 0; i < buf.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(buf[i])) << i;
    else EXPECT_EQ(std::bit_cast<uint32_t>(buf[i]), std::bit_cast<uint32_t>(want[i])) << i;
  }
  // With the masked columns at -inf, argmax_rows picks among the allowed ones.
  std::vector<int32_t> ids(3, -1);
  be->argmax_rows(ids, Tensor::strided(buf.data(), DType::kF32, {R, V}, {stride, 1}, Device::kCpu));
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 0, 0}));
  HostTensor x({2, 4});
  std::vector<int8_t> short_mask(3, 1);
  EXPECT_THROW(be->mask_columns(x.view(), Tensor::make(short_mask.data(), DType::kI8, {3}, Device::kCpu)), Error);
  HostTensor f32_mask({4});
  EXPECT_THROW(be->mask_columns(x.view(), f32_mask.view()), Error);  // the mask is i8
}

// edit_logits applies each edit in the host sampler's order, against hand-computed values: the bias (or the ban),
// the repetition penalty (a positive logit divided, any other multiplied), the presence/frequency term subtracted;
// the identities (add −0, scale 1, sub 0) leave −0 and NaN as they are; rows at a stride, the rest untouched. Edits
// out of x, out of order or naming an element twice are refused.
TEST_P(BackendOps, EditLogitsAppliesBiasThenRepetitionThenPresence) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const int64_t R = 2, V = 5, stride = 7;
  std::vector<float> buf = {2.0f, -3.0f, 0.0f, -0.0f, nan, 77, 77,  //
                            1.0f, 4.0f, -1.0f, inf, 6.0f, 77, 77};
  const std::vector<LogitEdit> edits = {
      {.row = 0, .col = 0, .add = 1.0f, .scale = 2.0f, .sub = 0.5f},   // (2 + 1) / 2 − 0.5 = 1
      {.row = 0, .col = 1, .scale = 2.0f},                              // −3 · 2 = −6
      {.row = 0, .col = 2, .add = -inf, .scale = 2.0f, .sub = 1.0f},   // banned: −inf
      {.row = 0, .col = 3},                                             // identities: −0 stays −0
      {.row = 0, .col = 4, .sub = 0.0f},                                // NaN stays NaN
      {.row = 1, .col = 0, .add = -2.0f, .scale = 4.0f},                // (1 − 2) · 4 = −4
      {.row = 1, .col = 1, .scale = 0.5f, .sub = 0.75f},                // 4 / 0.5 − 0.75 = 7.25
      {.row = 1, .col = 4, .add = 0.5f, .sub = 2.5f},                   // 6 + 0.5 − 2.5 = 4
  };
  const Tensor x = Tensor::strided(buf.data(), DType::kF32, {R, V}, {stride, 1}, Device::kCpu);
  be->edit_logits(x, edits);
  const std::vector<float> want = {1.0f, -6.0f, -inf, -0.0f, nan, 77, 77,  //
                                   -4.0f, 7.25f, -1.0f, inf, 4.0f, 77, 77};
  for (size_t i = 0; i < buf.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(buf[i])) << i;
    else EXPECT_EQ(std::bit_cast<uint32_t>(buf[i]), std::bit_cast<uint32_t>(want[i])) << i << ": " << buf[i];
  }
  be->edit_logits(x, {});  // nothing to do
  for (const auto& bad : std::vector<std::vector<LogitEdit>>{
           {{.row = 2, .col = 0}},                          // a row past R
           {{.row = 0, .col = 5}},                          // a column past V
           {{.row = 0, .col = -1}},
           {{.row = 1, .col = 0}, {.row = 0, .col = 3}},    // rows out of order
           {{.row = 0, .col = 3}, {.row = 0, .col = 1}},    // columns out of order
           {{.row = 0, .col = 3}, {.row = 0, .col = 3}}})   // one element twice
    EXPECT_THROW(be->edit_logits(x, bad), Error);
}

// max_rows hands back (maximum, first index as an exact f32) per row, NaN never the maximum ((NaN, -1) for a row of
// NaN only), and with nan_first exactly argmax_rows's index (a NaN at index 0 wins); rows at a stride, the padding
// unread; rows longer than 2^24 and a best of the wrong shape are refused.
TEST_P(BackendOps, MaxRowsGivesTheMaximumAndItsFirstIndex) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  struct Case {
    std::vector<float> row;
    float max;
    float at;                // without nan_first
    float max_first, at_first;  // with nan_first
  };
  const std::vector<Case> cases = {
      {{3, 9, 1}, 9, 1, 9, 1},
      {{5, 5, 5}, 5, 0, 5, 0},                 // ties: the lower index
      {{-inf, -inf}, -inf, 0, -inf, 0},        // all masked
      {{nan, 9, 10}, 10, 2, nan, 0},           // NaN first: only nan_first keeps it
      {{1, nan, 3, nan}, 3, 2, 3, 2},          // NaN elsewhere: never chosen
      {{nan, nan}, nan, -1, nan, 0},           // no number at all
      {{2, nan, inf, inf}, inf, 2, inf, 2},
      {{-0.0f, 0.0f}, -0.0f, 0, -0.0f, 0},     // -0 == +0: a tie
  };
  const auto same = [](float a, float b) { return std::isnan(a) ? std::isnan(b) : a == b; };
  for (const Case& c : cases)
    for (bool nan_first : {false, true}) {
      HostTensor x({1, static_cast<int64_t>(c.row.size())});
      x.values = c.row;
      HostTensor best({1, 2});
      be->max_rows(best.view(), x.view(), nan_first);
      EXPECT_TRUE(same(best.values[0], nan_first ? c.max_first : c.max))
          << "row of " << c.row.size() << " nan_first " << nan_first << ": max " << best.values[0];
      EXPECT_EQ(best.values[1], nan_first ? c.at_first : c.at) << "row of " << c.row.size() << " nan_first " << nan_first;
      if (nan_first) {  // the index is argmax_rows's
        std::vector<int32_t> id(1, -1);
        be->argmax_rows(id, x.view());
        EXPECT_EQ(static_cast<float>(id[0]), best.values[1]);
      }
    }
  for (int64_t V : {1, 1000, 151936}) {
    const int64_t R = 4, stride = V + 5;
    std::vector<float> buf(static_cast<size_t>(R * stride), 1e30f);
    std::uniform_real_distribution<float> u(-4.0f, 4.0f);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t k = 0; k < V; ++k) buf[static_cast<size_t>(r * stride + k)] = std::round(u(rng) * 4) / 4;
    const Tensor x = Tensor::strided(buf.data(), DType::kF32, {R, V}, {stride, 1}, Device::kCpu);
    std::vector<int32_t> ids(static_cast<size_t>(R));
    be->argmax_rows(ids, x);
    HostTensor best({R, 2});
    be->max_rows(best.view(), x, false);
    for (int64_t r = 0; r < R; ++r) {
      EXPECT_EQ(best.values[static_cast<size_t>(2 * r + 1)], static_cast<float>(ids[static_cast<size_t>(r)])) << V;
      EXPECT_EQ(best.values[static_cast<size_t>(2 * r)], buf[static_cast<size_t>(r * stride + ids[static_cast<size_t>(r)])]);
    }
  }
  HostTensor x({2, 4}), wrong({2, 3}), one({1, 2});
  EXPECT_THROW(be->max_rows(wrong.view(), x.view(), false), Error);
  EXPECT_THROW(be->max_rows(one.view(), x.view(), false), Error);
  const Tensor too_long = Tensor::make(x.values.data(), DType::kF32, {0, kMaxRowsColumns + 1}, Device::kCpu);
  HostTensor none({0, 2});
  EXPECT_THROW(be->max_rows(none.view(), too_long, false), Error);  // an index beyond 2^24 is not exact in f32
}

// top_k_rows hands back each row's k first (value, index as an exact f32) pairs in one total order: larger first,
// equal values (-0 == +0) by the lower index, NaN after every number (by index), (NaN, -1) past the row's end.
// Answers written by hand; then, on random rows full of ties, every k's pairs are the first k of a larger k's, the
// first pair is max_rows's, and a strided row's padding is never read. Wrong shapes, k beyond kTopKRowsMax and rows
// beyond 2^24 columns are refused.
TEST_P(BackendOps, TopKRowsTakesTheFirstPairsInOneOrder) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  struct Case {
    std::vector<float> row;
    std::vector<std::pair<float, float>> top;  // (value, index) expected, k = top.size()
  };
  const std::vector<Case> cases = {
      {{1, 3, 3, 2, -inf, nan, 3, -0.0f, 0.0f}, {{3, 1}, {3, 2}, {3, 6}, {2, 3}, {1, 0}}},
      {{1, 3, 3, 2, -inf, nan, 3, -0.0f, 0.0f},
       {{3, 1}, {3, 2}, {3, 6}, {2, 3}, {1, 0}, {-0.0f, 7}, {0.0f, 8}, {-inf, 4}, {nan, 5}}},
      {{nan, 5}, {{5, 1}, {nan, 0}, {nan, -1}, {nan, -1}}},  // k beyond the row: empty slots
      {{nan, nan, -inf}, {{-inf, 2}, {nan, 0}}},
      {{7}, {{7, 0}}},
      {{inf, 1, inf}, {{inf, 0}, {inf, 2}, {1, 1}}},
  };
  const auto same = [](float a, float b) { return std::isnan(a) ? std::isnan(b) : a == b && std::signbit(a) == std::signbit(b); };
  for (const Case& c : cases) {
    const int64_t V = static_cast<int64_t>(c.row.size()), k = static_cast<int64_t>(c.top.size());
    HostTensor x({1, V});
    x.values = c.row;
    HostTensor best({1, k, 2});
    be->top_k_rows(best.view(), x.view());
    for (int64_t j = 0; j < k; ++j) {
      EXPECT_TRUE(same(best.values[static_cast<size_t>(2 * j)], c.top[static_cast<size_t>(j)].first))
          << "row of " << V << ", k " << k << ", slot " << j << ": value " << best.values[static_cast<size_t>(2 * j)];
      EXPECT_EQ(best.values[static_cast<size_t>(2 * j + 1)], c.top[static_cast<size_t>(j)].second)
          << "row of " << V << ", k " << k << ", slot " << j;
    }
  }
  for (int64_t V : {1, 63, 1000, 151936}) {
    const int64_t R = 3, stride = V + 5;
    std::vector<float> buf(static_cast<size_t>(R * stride), 1e30f);  // the padding would win if it were read
    std::uniform_real_distribution<float> u(-4.0f, 4.0f);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < V; ++c) buf[static_cast<size_t>(r * stride + c)] = std::round(u(rng) * 4) / 4;
    const Tensor x = Tensor::strided(buf.data(), DType::kF32, {R, V}, {stride, 1}, Device::kCpu);
    HostTensor all({R, kTopKRowsMax, 2}), max({R, 2});
    be->top_k_rows(all.view(), x);
    be->max_rows(max.view(), x, false);
    for (int64_t r = 0; r < R; ++r) {
      EXPECT_EQ(all.values[static_cast<size_t>(r * 2 * kTopKRowsMax)], max.values[static_cast<size_t>(2 * r)]) << V;
      EXPECT_EQ(all.values[static_cast<size_t>(r * 2 * kTopKRowsMax + 1)], max.values[static_cast<size_t>(2 * r + 1)]) << V;
      for (int64_t j = 0; j < std::min<int64_t>(V, kTopKRowsMax); ++j) {  // each pair is the row's entry, in order
        const float v = all.values[static_cast<size_t>(r * 2 * kTopKRowsMax + 2 * j)];
        const float at = all.values[static_cast<size_t>(r * 2 * kTopKRowsMax + 2 * j + 1)];
        ASSERT_GE(at, 0.0f);
        EXPECT_EQ(v, buf[static_cast<size_t>(r * stride + static_cast<int64_t>(at))]);
        if (j > 0) {
          const float pv = all.values[static_cast<size_t>(r * 2 * kTopKRowsMax + 2 * j - 2)];
          const float pat = all.values[static_cast<size_t>(r * 2 * kTopKRowsMax + 2 * j - 1)];
          EXPECT_TRUE(pv > v || (pv == v && pat < at)) << "V " << V << " slot " << j;
        }
      }
      // No entry left out beats the last one kept.
      if (V > kTopKRowsMax) {
        const float last = all.values[static_cast<size_t>(r * 2 * kTopKRowsMax + 2 * kTopKRowsMax - 2)];
        int64_t above = 0;
        for (int64_t c = 0; c < V; ++c) above += buf[static_cast<size_t>(r * stride + c)] > last ? 1 : 0;
        EXPECT_LT(above, kTopKRowsMax) << V;
      }
    }
    for (int64_t k : {1, 5, 20}) {
      HostTensor some({R, k, 2});
      be->top_k_rows(some.view(), x);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < 2 * k; ++j)
          EXPECT_TRUE(same(some.values[static_cast<size_t>(r * 2 * k + j)], all.values[static_cast<size_t>(r * 2 * kTopKRowsMax + j)]))
              << "V " << V << " k " << k << " row " << r << " float " << j;
    }
  }
  HostTensor x({2, 4}), flat({2, 6}), one({1, 3, 2}), odd({2, 3, 3}), none_k({2, 0, 2}), wide({2, kTopKRowsMax + 1, 2});
  EXPECT_THROW(be->top_k_rows(flat.view(), x.view()), Error);
  EXPECT_THROW(be->top_k_rows(one.view(), x.view()), Error);
  EXPECT_THROW(be->top_k_rows(odd.view(), x.view()), Error);
  EXPECT_THROW(be->top_k_rows(none_k.view(), x.view()), Error);
  EXPECT_THROW(be->top_k_rows(wide.view(), x.view()), Error);
  const Tensor too_long = Tensor::make(x.values.data(), DType::kF32, {0, kMaxRowsColumns + 1}, Device::kCpu);
  HostTensor none({0, 3, 2});
  EXPECT_THROW(be->top_k_rows(none.view(), too_long), Error);  // an index beyond 2^24 is not exact in f32
}

TEST_P(BackendOps, RmsNormPlainAndZeroCentred) {
  for (DType dt : kWeightDtypes)
    for (float off : {0.0f, 1.0f}) {
      HostTensor x = random_tensor({7, 3, 40}, rng, -3, 3);
      HostTensor w = random_tensor({40}, rng, -0.5, 1.5, dt);
      HostTensor y({7, 3, 40});
      be->rms_norm(y.view(), x.view(), w.view(), 1e-6f, off);
      EXPECT_LT(rel_err(y.values, ref::rms_norm(x.values, w.values, 40, 1e-6, off)), 1e-6);
      be->rms_norm(x.view(), x.view(), w.view(), 1e-6f, off);  // in place
      EXPECT_EQ(x.values, y.values);
    }
}

// add_rms_norm is add() then rms_norm() in one pass: the same bits (the sum is stored, then normalised as rms_norm
// does), large enough (64 rows of 2048) that both are threaded; y may be delta; y == x is refused.
TEST_P(BackendOps, AddRmsNormIsAddThenRmsNorm) {
  for (DType dt : kWeightDtypes)
    for (float off : {0.0f, 1.0f})
      for (bool y_is_delta : {false, true}) {
        SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " offset " << off << " y is delta " << y_is_delta);
        const int64_t T = 64, N = 2048;
        HostTensor x = random_tensor({T, N}, rng, -3, 3), d = random_tensor({T, N}, rng, -3, 3);
        HostTensor w = random_tensor({N}, rng, -0.5, 1.5, dt);
        HostTensor x2 = x, y2({T, N});
        be->add(x2.view(), x2.view(), d.view());
        be->rms_norm(y2.view(), x2.view(), w.view(), 1e-6f, off);
        HostTensor y({T, N});
        be->add_rms_norm(x.view(), y_is_delta ? d.view() : y.view(), d.view(), w.view(), 1e-6f, off);
        EXPECT_EQ(x.values, x2.values);
        EXPECT_EQ((y_is_delta ? d : y).values, y2.values);
      }
  // Strided rows: x and delta padded, y the second half of wider rows; padding untouched.
  const int64_t T = 6, N = 40;
  HostTensor xb = random_tensor({T, 48}, rng), db = random_tensor({T, 56}, rng), yb({T, 2 * N});
  HostTensor w = random_tensor({N}, rng, 0.5, 1.5);
  const HostTensor xb0 = xb;
  Tensor xs = Tensor::strided(xb.values.data(), DType::kF32, {T, N}, {48, 1});
  Tensor ds = Tensor::strided(db.values.data(), DType::kF32, {T, N}, {56, 1});
  Tensor ys = Tensor::strided(yb.values.data() + N, DType::kF32, {T, N}, {2 * N, 1});
  be->add_rms_norm(xs, ys, ds, w.view(), 1e-6f, 0.0f);
  std::vector<float> sum, got;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < N; ++i) {
      const size_t at = static_cast<size_t>(t * 48 + i);
      sum.push_back(xb0.values[at] + db.values[static_cast<size_t>(t * 56 + i)]);
      ASSERT_EQ(xb.values[at], sum.back());
      got.push_back(yb.values[static_cast<size_t>(t * 2 * N + N + i)]);
      ASSERT_EQ(yb.values[static_cast<size_t>(t * 2 * N + i)], 0.0f);
    }
    for (int64_t i = N; i < 48; ++i)
      ASSERT_EQ(xb.values[static_cast<size_t>(t * 48 + i)], xb0.values[static_cast<size_t>(t * 48 + i)]);
  }
  EXPECT_LT(rel_err(got, ref::rms_norm(sum, w.values, N, 1e-6, 0.0)), 1e-6);
  EXPECT_THROW(be->add_rms_norm(xs, xs, ds, w.view(), 1e-6f, 0.0f), Error);  // y aliases x
  HostTensor wrong({T, N + 1});
  EXPECT_THROW(be->add_rms_norm(xs, ys, wrong.view(), w.view(), 1e-6f, 0.0f), Error);  // delta shape
}

TEST_P(BackendOps, RmsNormOnStridedHeads) {
  // q_proj output [T, nh, 2·hd] per head [query | gate]: normalise only the query halves
  const int64_t T = 5, nh = 3, hd = 16;
  HostTensor qg = random_tensor({T, nh, 2 * hd}, rng);
  const std::vector<float> before = qg.values;
  HostTensor w = random_tensor({hd}, rng, -0.2, 0.2);
  Tensor q = Tensor::strided(qg.values.data(), DType::kF32, {T, nh, hd}, {nh * 2 * hd, 2 * hd, 1});
  be->rms_norm(q, q, w.view(), 1e-6f, 1.0f);
  std::vector<float> qin, qout;
  for (int64_t r = 0; r < T * nh; ++r) {
    qin.insert(qin.end(), before.begin() + r * 2 * hd, before.begin() + r * 2 * hd + hd);
    qout.insert(qout.end(), qg.values.begin() + r * 2 * hd, qg.values.begin() + r * 2 * hd + hd);
    for (int64_t i = hd; i < 2 * hd; ++i)
      ASSERT_EQ(qg.values[static_cast<size_t>(r * 2 * hd + i)], before[static_cast<size_t>(r * 2 * hd + i)]);
  }
  EXPECT_LT(rel_err(qout, ref::rms_norm(qin, w.values, hd, 1e-6, 1.0)), 1e-6);
}

TEST_P(BackendOps, GatedRmsNormAndL2Norm) {
  for (DType dt : kWeightDtypes) {
    HostTensor x = random_tensor({9, 4, 24}, rng, -0.1, 0.1);
    HostTensor z = random_tensor({9, 4, 24}, rng, -4, 4);
    HostTensor w = random_tensor({24}, rng, 0.5, 1.5, dt);
    HostTensor y({9, 4, 24});
    be->gated_rms_norm(y.view(), x.view(), z.view(), w.view(), 1e-6f);
    EXPECT_LT(rel_err(y.values, ref::gated_rms_norm(x.values, z.values, w.values, 24, 1e-6)), 2e-6);
  }
  HostTensor x = random_tensor({10, 2, 32}, rng, -2, 2);
  x.values[5] = 0.0f;
  HostTensor y({10, 2, 32});
  be->l2_norm(y.view(), x.view(), 1e-6f, 0.125f);
  EXPECT_LT(rel_err(y.values, ref::l2_norm(x.values, 32, 1e-6, 0.125)), 1e-6);
  HostTensor tiny({1, 8});  // all zeros: eps keeps it finite
  be->l2_norm(tiny.view(), tiny.view(), 1e-6f, 1.0f);
  for (float v : tiny.values) EXPECT_EQ(v, 0.0f);
}

TEST_P(BackendOps, Elementwise) {
  HostTensor a = random_tensor({6, 50}, rng, -8, 8), b = random_tensor({6, 50}, rng, -8, 8);
  HostTensor y({6, 50});
  be->add(y.view(), a.view(), b.view());
  for (size_t i = 0; i < y.values.size(); ++i) ASSERT_EQ(y.values[i], a.values[i] + b.values[i]);
  be->silu_mul(y.view(), a.view(), b.view());
  for (size_t i = 0; i < y.values.size(); ++i)
    ASSERT_NEAR(y.values[i], ref::silu(a.values[i]) * b.values[i], 1e-5 * (1 + std::abs(y.values[i])));
  be->sigmoid_mul(y.view(), a.view(), b.view());
  for (size_t i = 0; i < y.values.size(); ++i)
    ASSERT_NEAR(y.values[i], a.values[i] * ref::sigmoid(b.values[i]), 1e-5 * (1 + std::abs(y.values[i])));
  HostTensor c({6, 51});
  EXPECT_THROW(be->add(y.view(), a.view(), c.view()), Error);
}

TEST_P(BackendOps, GdnGating) {
  for (DType dt : kWeightDtypes) {
    const int64_t T = 13, nv = 6;
    HostTensor a = random_tensor({T, nv}, rng, -6, 6), b = random_tensor({T, nv}, rng, -6, 6);
    a.values[3] = 25.0f;  // above softplus' threshold 20
    a.values[4] = -30.0f;
    HostTensor A_log = random_tensor({nv}, rng, -3, 2.5, dt), dt_bias = random_tensor({nv}, rng, -1, 1, dt);
    HostTensor g({T, nv}), beta({T, nv});
    be->gdn_gating(g.view(), beta.view(), a.view(), b.view(), A_log.view(), dt_bias.view());
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < nv; ++h) {
        const size_t i = static_cast<size_t>(t * nv + h);
        const double x = double(a.values[i]) + dt_bias.values[static_cast<size_t>(h)];
        const double sp = x > 20 ? x : std::log1p(std::exp(x));
        const double want = -std::exp(double(A_log.values[static_cast<size_t>(h)])) * sp;
        ASSERT_NEAR(g.values[i], want, 2e-6 * (1 + std::abs(want)));
        ASSERT_NEAR(beta.values[i], ref::sigmoid(b.values[i]), 1e-6);
      }
  }
}

TEST_P(BackendOps, PartialRope) {
  const int64_t T = 9, H = 3, D = 32;
  for (int64_t R : {int64_t{8}, int64_t{32}})
    for (double theta : {1e4, 1e7}) {
      HostTensor x = random_tensor({T, H, D}, rng);
      std::vector<int32_t> pos{0, 1, 2, 7, 63, 64, 200, 333, 399};
      const ref::Vec want = ref::rope(x.values, pos, H, D, R, theta);
      be->rope(x.view(), pos, R, theta);
      EXPECT_LT(rel_err(x.values, want), 3e-5) << "R=" << R << " theta=" << theta;
      for (int64_t t = 0; t < T; ++t)  // pass-through dims are bit-identical
        for (int64_t h = 0; h < H; ++h)
          for (int64_t i = R; i < D; ++i) {
            const size_t idx = static_cast<size_t>((t * H + h) * D + i);
            ASSERT_EQ(x.values[idx], static_cast<float>(want[idx]));
          }
    }
  HostTensor x({2, 1, 8});
  const std::vector<int32_t> pos{0, 1};
  EXPECT_THROW(be->rope(x.view(), pos, 7, 1e4), Error);
}

// Writes the K/V of S sequences into a paged cache (blocks in `perm` order) and runs attention on the last
// n_new tokens of each sequence. Returns the output [T, nh, hd] and fills the reference.
struct AttnCase {
  std::vector<int64_t> ctx, n_new;
  int64_t nh, nkv, hd, block_size;
};

std::vector<float> run_paged_attention(Backend& be, const AttnCase& c, DType kv_dtype, bool scatter, std::mt19937 rng,
                                       ref::Vec* want) {
  const int64_t S = static_cast<int64_t>(c.ctx.size());
  int64_t max_blocks = 0, total_blocks = 0;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t nb = (c.ctx[static_cast<size_t>(s)] + c.block_size - 1) / c.block_size;
    max_blocks = std::max(max_blocks, nb);
    total_blocks += nb;
  }
  const int64_t pool_blocks = total_blocks + 3;  // a few unused blocks
  std::vector<int32_t> ids(static_cast<size_t>(pool_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  if (scatter) {
    std::mt19937 shuffle_rng = rng;  // a copy: the data drawn below is the same with and without scattering
    std::shuffle(ids.begin(), ids.end(), shuffle_rng);
  }
  HostTensor kc({pool_blocks, c.block_size, c.nkv, c.hd}, kv_dtype), vc({pool_blocks, c.block_size, c.nkv, c.hd}, kv_dtype);
  std::vector<int32_t> table(static_cast<size_t>(S * max_blocks), -1), q_start{0}, seq_len;
  size_t next = 0;
  std::vector<HostTensor> ks, vs;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t ctx = c.ctx[static_cast<size_t>(s)];
    for (int64_t b = 0; b * c.block_size < ctx; ++b) table[static_cast<size_t>(s * max_blocks + b)] = ids[next++];
    ks.push_back(random_tensor({ctx, c.nkv, c.hd}, rng, -1, 1));
    vs.push_back(random_tensor({ctx, c.nkv, c.hd}, rng, -1, 1));
    // history first, in two writes (the engine writes prompt chunks then decode tokens)
    std::vector<int32_t> slots(static_cast<size_t>(ctx));
    for (int64_t p = 0; p < ctx; ++p)
      slots[static_cast<size_t>(p)] =
          table[static_cast<size_t>(s * max_blocks + p / c.block_size)] * static_cast<int32_t>(c.block_size) +
          static_cast<int32_t>(p % c.block_size);
    be.kv_write(KvLayer{kc.view(), vc.view(), {}, {}}, ks.back().view(), vs.back().view(), slots);
    q_start.push_back(q_start.back() + static_cast<int32_t>(c.n_new[static_cast<size_t>(s)]));
    seq_len.push_back(static_cast<int32_t>(ctx));
  }
  kc.unsync();
  vc.unsync();
  const int64_t T = q_start.back();
  HostTensor q = random_tensor({T, c.nh, c.hd}, rng, -2, 2), out({T, c.nh, c.hd});
  PagedKv kv{q_start, seq_len, table, static_cast<int32_t>(max_blocks)};
  const float scale = 1.0f / std::sqrt(float(c.hd));
  be.attention(out.view(), q.view(), KvLayer{kc.view(), vc.view(), {}, {}}, kv, scale);
  if (want) {
    want->clear();
    for (int64_t s = 0; s < S; ++s) {
      const int64_t ctx = c.ctx[static_cast<size_t>(s)], n = c.n_new[static_cast<size_t>(s)];
      // reference K/V = the values as stored (rounded to the cache dtype)
      std::vector<float> kr = ks[static_cast<size_t>(s)].values, vr = vs[static_cast<size_t>(s)].values;
      for (auto* arr : {&kr, &vr})
        for (auto& e : *arr)
          e = kv_dtype == DType::kBF16 ? bf16_to_f32(f32_to_bf16(e))
                                       : kv_dtype == DType::kF16 ? f16_to_f32(f32_to_f16(e)) : e;
      std::vector<float> qs(q.values.begin() + q_start[static_cast<size_t>(s)] * c.nh * c.hd,
                            q.values.begin() + q_start[static_cast<size_t>(s + 1)] * c.nh * c.hd);
      const ref::Vec o = ref::attention(qs, kr, vr, n, ctx, c.nh, c.nkv, c.hd, scale);
      want->insert(want->end(), o.begin(), o.end());
    }
  }
  return out.values;
}

TEST_P(BackendOps, PagedAttentionGqaAllKvDtypes) {
  const AttnCase c{{37, 5, 70, 16}, {1, 5, 16, 3}, 6, 2, 32, 16};
  for (DType dt : kWeightDtypes) {
    ref::Vec want;
    const std::vector<float> got = run_paged_attention(*be, c, dt, true, rng, &want);
    EXPECT_LT(rel_err(got, want), 2e-6) << dtype_name(dt);
  }
}

TEST_P(BackendOps, PagedAttentionScatteredEqualsContiguous) {
  const AttnCase c{{45, 100}, {45, 1}, 4, 4, 16, 8};
  for (DType dt : kWeightDtypes) {
    const auto scattered = run_paged_attention(*be, c, dt, true, rng, nullptr);
    const auto contiguous = run_paged_attention(*be, c, dt, false, rng, nullptr);
    EXPECT_EQ(scattered, contiguous) << dtype_name(dt);
  }
}

TEST_P(BackendOps, AttentionRejectsBadTables) {
  HostTensor kc({4, 8, 1, 16}), vc({4, 8, 1, 16}), q({2, 2, 16}), out({2, 2, 16});
  std::vector<int32_t> q_start{0, 2}, seq_len{10}, table{0, 7};
  PagedKv kv{q_start, seq_len, table, 2};
  EXPECT_THROW(be->attention(out.view(), q.view(), KvLayer{kc.view(), vc.view(), {}, {}}, kv, 0.25f), Error);  // block 7 >= 4
  std::vector<int32_t> short_len{1};
  PagedKv kv2{q_start, short_len, table, 2};
  EXPECT_THROW(be->attention(out.view(), q.view(), KvLayer{kc.view(), vc.view(), {}, {}}, kv2, 0.25f), Error);  // 2 new > 1
}

TEST_P(BackendOps, Conv1dBatchFromZeroState) {
  for (int64_t K : {int64_t{4}, int64_t{3}})
    for (DType dt : kWeightDtypes) {
      const int64_t C = 300;
      const std::vector<int32_t> q_start{0, 1, 8, 8, 40};  // lengths 1, 7, 0, 32
      const std::vector<int32_t> slots{2, 0, 3, 1};
      const int64_t T = q_start.back();
      HostTensor x = random_tensor({T, C}, rng, -2, 2), w = random_tensor({C, K}, rng, -1, 1, dt), out({T, C});
      HostTensor state({4, K - 1, C});
      be->conv1d(out.view(), x.view(), w.view(), state.view(), SeqBatch{q_start, slots}, true);
      for (size_t s = 0; s + 1 < q_start.size(); ++s) {
        const int64_t r0 = q_start[s], n = q_start[s + 1] - r0;
        std::vector<float> xs(x.values.begin() + r0 * C, x.values.begin() + (r0 + n) * C);
        const ref::Vec want = ref::conv1d(xs, w.values, n, C, K, true);
        std::vector<float> got(out.values.begin() + r0 * C, out.values.begin() + (r0 + n) * C);
        if (n > 0) {
          EXPECT_LT(rel_err(got, want), 2e-6) << "K=" << K << " seq " << s;
        }
        // state = last K-1 raw inputs (zeros where the sequence is shorter)
        for (int64_t i = 0; i < K - 1; ++i)
          for (int64_t c = 0; c < C; ++c) {
            const int64_t src = n - (K - 1) + i;
            const float expect = src >= 0 ? x.values[static_cast<size_t>((r0 + src) * C + c)] : 0.0f;
            ASSERT_EQ(state.values[static_cast<size_t>((slots[s] * (K - 1) + i) * C + c)], expect);
          }
      }
    }
}

// Taps in a strided view (each channel's K taps followed by a gap) give the bits the same taps stored contiguously do.
TEST_P(BackendOps, Conv1dStridedTapsEqualContiguous) {
  const int64_t C = 300, K = 4, T = 9;
  for (DType dt : kWeightDtypes) {
    HostTensor wide = random_tensor({C, K + 3}, rng, -1, 1, dt), w({C, K}, dt);
    for (int64_t c = 0; c < C; ++c)
      for (int64_t j = 0; j < K; ++j) w.values[static_cast<size_t>(c * K + j)] = wide.values[static_cast<size_t>(c * (K + 3) + j)];
    w.sync();
    const Tensor strided = Tensor::strided(wide.data(), dt, {C, K}, {K + 3, 1});
    HostTensor x = random_tensor({T, C}, rng, -2, 2), a({T, C}), b({T, C});
    HostTensor sa = random_tensor({1, K - 1, C}, rng, -1, 1), sb = sa;
    const std::vector<int32_t> q_start{0, int32_t(T)}, slot{0};
    be->conv1d(a.view(), x.view(), w.view(), sa.view(), SeqBatch{q_start, slot}, true);
    be->conv1d(b.view(), x.view(), strided, sb.view(), SeqBatch{q_start, slot}, true);
    EXPECT_EQ(b.values, a.values) << dtype_name(dt);
    EXPECT_EQ(sb.values, sa.values) << dtype_name(dt);
  }
}

TEST_P(BackendOps, Conv1dInPiecesEqualsWhole) {
  const int64_t C = 96, K = 4, T = 41;
  HostTensor x = random_tensor({T, C}, rng, -2, 2), w = random_tensor({C, 1, K}, rng, -1, 1, DType::kBF16);
  HostTensor whole({T, C}), st1({1, K - 1, C});
  const std::vector<int32_t> slot{0};
  be->conv1d(whole.view(), x.view(), w.view(), st1.view(), SeqBatch{std::vector<int32_t>{0, int32_t(T)}, slot}, true);
  HostTensor pieces({T, C}), st2({1, K - 1, C});
  int64_t r = 0;
  for (int64_t len : {1, 2, 1, 5, 16, 1, 15}) {
    Tensor xp = x.view().slice0(r, r + len), op = pieces.view().slice0(r, r + len);
    be->conv1d(op, xp, w.view(), st2.view(), SeqBatch{std::vector<int32_t>{0, int32_t(len)}, slot}, true);
    r += len;
  }
  ASSERT_EQ(r, T);
  EXPECT_EQ(pieces.values, whole.values);
  EXPECT_EQ(st2.values, st1.values);
}

struct DeltaCase {
  std::vector<int32_t> q_start;
  int64_t nk, nv, dk, dv;
  float g_lo, g_hi;
};

struct DeltaData {
  HostTensor q, k, v, g, beta, state;
};

DeltaData make_delta_data(const DeltaCase& c, std::mt19937& rng, bool random_state) {
  const int64_t T = c.q_start.back(), S = static_cast<int64_t>(c.q_start.size()) - 1;
  DeltaData d;
  d.q = random_tensor({T, c.nk, c.dk}, rng);
  d.k = random_tensor({T, c.nk, c.dk}, rng);
  // l2-normalise like the model does (q also scaled by dk^-1/2)
  for (int64_t r = 0; r < T * c.nk; ++r) {
    double sq = 0, sk = 0;
    for (int64_t i = 0; i < c.dk; ++i) {
      sq += double(d.q.values[static_cast<size_t>(r * c.dk + i)]) * d.q.values[static_cast<size_t>(r * c.dk + i)];
      sk += double(d.k.values[static_cast<size_t>(r * c.dk + i)]) * d.k.values[static_cast<size_t>(r * c.dk + i)];
    }
    for (int64_t i = 0; i < c.dk; ++i) {
      d.q.values[static_cast<size_t>(r * c.dk + i)] /= static_cast<float>(std::sqrt(sq) * std::sqrt(double(c.dk)));
      d.k.values[static_cast<size_t>(r * c.dk + i)] /= static_cast<float>(std::sqrt(sk));
    }
  }
  d.v = random_tensor({T, c.nv, c.dv}, rng, -2, 2);
  d.g = random_tensor({T, c.nv}, rng, c.g_lo, c.g_hi);
  d.beta = random_tensor({T, c.nv}, rng, 0.0, 1.0);
  d.state = random_tensor({S + 1, c.nv, c.dk, c.dv}, rng, random_state ? -0.5f : 0.0f, random_state ? 0.5f : 0.0f);
  return d;
}

TEST_P(BackendOps, GatedDeltaRuleBothFormsMatchReference) {
  const std::vector<DeltaCase> cases{
      {{0, 150}, 2, 6, 24, 16, -1.0f, 0.0f},                 // one long sequence, 3 chunks, last partial
      {{0, 1, 4, 68, 133, 133, 136}, 2, 4, 16, 16, -0.3f, 0.0f},  // a batch: 1, 3, 64, 65, 0, 3 tokens
      {{0, 100}, 1, 2, 32, 8, -20.0f, -5.0f},               // fast decays (exp(γ) underflows inside a chunk)
  };
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const DeltaCase& c = cases[ci];
    for (bool random_state : {false, true}) {
      DeltaData d0 = make_delta_data(c, rng, random_state);
      const int64_t S = static_cast<int64_t>(c.q_start.size()) - 1, T = c.q_start.back();
      std::vector<int32_t> slots(static_cast<size_t>(S));
      for (int64_t s = 0; s < S; ++s) slots[static_cast<size_t>(s)] = static_cast<int32_t>(S - s);  // reversed
      // reference, per sequence
      ref::Vec want_out;
      std::vector<ref::Vec> want_state;
      for (int64_t s = 0; s < S; ++s) {
        const int64_t r0 = c.q_start[static_cast<size_t>(s)], n = c.q_start[static_cast<size_t>(s + 1)] - r0;
        auto rows = [&](const HostTensor& t, int64_t w) {
          return std::vector<float>(t.values.begin() + r0 * w, t.values.begin() + (r0 + n) * w);
        };
        const int64_t sz = c.nv * c.dk * c.dv;
        const size_t so = static_cast<size_t>(slots[static_cast<size_t>(s)] * sz);
        ref::Vec st(d0.state.values.begin() + static_cast<ptrdiff_t>(so), d0.state.values.begin() + static_cast<ptrdiff_t>(so + sz));
        const ref::Vec o = ref::delta_rule(rows(d0.q, c.nk * c.dk), rows(d0.k, c.nk * c.dk), rows(d0.v, c.nv * c.dv),
                                           rows(d0.g, c.nv), rows(d0.beta, c.nv), st, n, c.nk, c.nv, c.dk, c.dv);
        want_out.insert(want_out.end(), o.begin(), o.end());
        want_state.push_back(st);
      }
      std::vector<std::vector<float>> outs, states;
      for (DeltaRuleAlgo algo : {DeltaRuleAlgo::kRecurrent, DeltaRuleAlgo::kChunked, DeltaRuleAlgo::kAuto}) {
        DeltaData d = d0;
        HostTensor out({T, c.nv, c.dv});
        be->gated_delta_rule(out.view(), d.q.view(), d.k.view(), d.v.view(), d.g.view(), d.beta.view(), d.state.view(),
                             SeqBatch{c.q_start, slots}, algo);
        SCOPED_TRACE(::testing::Message() << "case " << ci << " algo " << int(algo) << " random_state " << random_state);
        EXPECT_LT(rel_err(out.values, want_out), 2e-5);
        for (int64_t s = 0; s < S; ++s) {
          const int64_t sz = c.nv * c.dk * c.dv;
          std::vector<float> got(d.state.values.begin() + slots[static_cast<size_t>(s)] * sz,
                                 d.state.values.begin() + (slots[static_cast<size_t>(s)] + 1) * sz);
          EXPECT_LT(rel_err(got, want_state[static_cast<size_t>(s)]), 2e-5) << "state of sequence " << s;
        }
        // slot 0 is not used by any sequence and stays untouched
        EXPECT_TRUE(std::equal(d.state.values.begin(), d.state.values.begin() + c.nv * c.dk * c.dv, d0.state.values.begin()));
        outs.push_back(out.values);
        states.push_back(d.state.values);
      }
      EXPECT_LT(max_abs_diff(outs[0], outs[1]), 1e-5);
      EXPECT_LT(max_abs_diff(states[0], states[1]), 1e-5);
    }
  }
}

// kAuto picks per sequence: the recurrent form below kDeltaRuleAutoChunkedMin rows, the chunked one from there (the
// two round differently, so kAuto's output of each sequence equals one form's bit for bit and not the other's).
TEST_P(BackendOps, GatedDeltaRuleAutoSwitchesAtItsThreshold) {
  const int32_t n = static_cast<int32_t>(kDeltaRuleAutoChunkedMin);
  const DeltaCase c{{0, n - 1, 2 * n - 1}, 2, 4, 16, 16, -0.3f, 0.0f};  // n - 1 tokens, then n
  const DeltaData d0 = make_delta_data(c, rng, true);
  const std::vector<int32_t> slots{1, 2};
  auto run = [&](DeltaRuleAlgo algo) {
    DeltaData d = d0;
    HostTensor out({2 * n - 1, c.nv, c.dv});
    be->gated_delta_rule(out.view(), d.q.view(), d.k.view(), d.v.view(), d.g.view(), d.beta.view(), d.state.view(),
                         SeqBatch{c.q_start, slots}, algo);
    return out.values;
  };
  const std::vector<float> rec = run(DeltaRuleAlgo::kRecurrent), chk = run(DeltaRuleAlgo::kChunked),
                           autov = run(DeltaRuleAlgo::kAuto);
  const auto row = static_cast<ptrdiff_t>(c.nv * c.dv);
  auto seq = [&](const std::vector<float>& v, int s) {
    return s == 0 ? std::vector<float>(v.begin(), v.begin() + (n - 1) * row)
                  : std::vector<float>(v.begin() + (n - 1) * row, v.end());
  };
  ASSERT_NE(seq(rec, 1), seq(chk, 1)) << "the two forms round alike here: the test would not see the switch";
  EXPECT_EQ(seq(autov, 0), seq(rec, 0)) << n - 1 << " tokens: recurrent";
  EXPECT_EQ(seq(autov, 1), seq(chk, 1)) << n << " tokens: chunked";
}

TEST_P(BackendOps, GatedDeltaRuleHugeDecaysStayFinite) {
  const DeltaCase c{{0, 80}, 1, 2, 16, 16, -0.5f, 0.0f};
  DeltaData d0 = make_delta_data(c, rng, true);
  d0.g.values[10] = -1e30f;  // a head that forgets everything at token 5
  d0.g.values[70] = -INFINITY;
  d0.g.values[71] = -3000.0f;
  const std::vector<int32_t> slot{1};
  ref::Vec st(d0.state.values.begin() + c.nv * c.dk * c.dv, d0.state.values.begin() + 2 * c.nv * c.dk * c.dv);
  const ref::Vec want = ref::delta_rule(d0.q.values, d0.k.values, d0.v.values, d0.g.values, d0.beta.values, st, 80,
                                        c.nk, c.nv, c.dk, c.dv);
  for (DeltaRuleAlgo algo : {DeltaRuleAlgo::kRecurrent, DeltaRuleAlgo::kChunked}) {
    DeltaData d = d0;
    HostTensor out({80, c.nv, c.dv});
    be->gated_delta_rule(out.view(), d.q.view(), d.k.view(), d.v.view(), d.g.view(), d.beta.view(), d.state.view(),
                         SeqBatch{c.q_start, slot}, algo);
    for (float v : out.values) ASSERT_TRUE(std::isfinite(v)) << int(algo);
    EXPECT_LT(rel_err(out.values, want), 2e-5) << int(algo);
  }
}

TEST_P(BackendOps, GatedDeltaRulePrefillThenDecodeEqualsWhole) {
  const DeltaCase c{{0, 140}, 2, 4, 16, 24, -0.5f, 0.0f};
  DeltaData d0 = make_delta_data(c, rng, false);
  const std::vector<int32_t> slot{1};
  DeltaData whole = d0;
  HostTensor out_whole({140, c.nv, c.dv});
  be->gated_delta_rule(out_whole.view(), whole.q.view(), whole.k.view(), whole.v.view(), whole.g.view(),
                       whole.beta.view(), whole.state.view(), SeqBatch{c.q_start, slot}, DeltaRuleAlgo::kRecurrent);
  DeltaData parts = d0;
  HostTensor out_parts({140, c.nv, c.dv});
  int64_t r = 0;
  for (int64_t len : {70, 1, 1, 60, 1, 7}) {  // chunked prefill pieces that split the 64-token chunks, then decode
    auto sl = [&](HostTensor& t) { return t.view().slice0(r, r + len); };
    be->gated_delta_rule(sl(out_parts), sl(parts.q), sl(parts.k), sl(parts.v), sl(parts.g), sl(parts.beta),
                         parts.state.view(), SeqBatch{std::vector<int32_t>{0, int32_t(len)}, slot},
                         len == 1 ? DeltaRuleAlgo::kRecurrent : DeltaRuleAlgo::kChunked);
    r += len;
  }
  EXPECT_LT(rel_err(out_parts.values, out_whole.values), 1e-5);
  EXPECT_LT(rel_err(parts.state.values, whole.state.values), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Cpu, BackendOps, ::testing::ValuesIn(backend_configs()),
                         [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace ninfer::testing
