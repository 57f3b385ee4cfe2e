// The int8 KV cache at the backend level: the row format, attention vs references, paging, GQA, errors.
#include <cstring>
#include <numeric>

#include "tests/support/error_message.h"
#include "tests/backend/ref_ops.h"
#include "tests/backend/test_util.h"
#include "tests/kv/kv_test_util.h"

namespace ninfer::testing {
namespace {

class Int8Kv : public ::testing::TestWithParam<BackendConfig> {
 protected:
  void SetUp() override { be = make_cpu_backend(GetParam().options); }
  std::unique_ptr<Backend> be;
  std::mt19937 rng{7};
};

// Writes rows into slots 0.. of a one-block i8 cache and checks codes and scales against the documented format.
TEST_P(Int8Kv, WriteQuantizesPerTokenAndHeadAsDocumented) {
  const int64_t nkv = 3, hd = 40, T = 5;  // hd = 40: the AVX2 loops' 8-wide body plus no tail, 16-block + 8
  OwnedKvLayer c(*be, DType::kI8, 2, 4, nkv, hd);
  HostTensor k = random_tensor({T, nkv, hd}, rng, -3, 3), v = random_tensor({T, nkv, hd}, rng, -0.01f, 0.01f);
  // token 1, head 0: an all-zero K row; token 2, head 2: a V row with exact ties (scale 1: amax 127)
  std::fill_n(k.values.begin() + (1 * nkv + 0) * hd, hd, 0.0f);
  float* tie = v.values.data() + (2 * nkv + 2) * hd;
  const float ties[] = {127.0f, 2.5f, 3.5f, -2.5f, -3.5f, 0.5f, -0.5f, 1.5f, 126.5f, -126.5f};
  std::fill_n(tie, hd, 0.0f);
  std::copy(std::begin(ties), std::end(ties), tie);
  const std::vector<int32_t> slots{0, 1, 7, -1, 4};  // token 3 skipped
  be->kv_write(c.layer, k.view(), v.view(), slots);
  for (int64_t t = 0; t < T; ++t) {
    if (slots[static_cast<size_t>(t)] < 0) continue;
    for (int which = 0; which < 2; ++which)
      for (int64_t h = 0; h < nkv; ++h) {
        const float* x = (which == 0 ? k : v).values.data() + (t * nkv + h) * hd;
        const QuantRow want = quantize_row_reference(x, hd);
        const int64_t slot = slots[static_cast<size_t>(t)];
        ASSERT_EQ(c.scale(which, slot, h), want.scale) << "token " << t << " head " << h << " which " << which;
        for (int64_t d = 0; d < hd; ++d)
          ASSERT_EQ(c.code(which, slot, h, d), want.codes[static_cast<size_t>(d)])
              << "token " << t << " head " << h << " which " << which << " d " << d;
      }
  }
  EXPECT_EQ(c.scale(0, 1, 0), 0.0f);  // the zero row
  EXPECT_EQ(c.code(0, 1, 0, 5), 0);
  EXPECT_EQ(c.scale(1, 7, 2), 1.0f);  // ties to even: 2.5→2, 3.5→4, −2.5→−2, −3.5→−4, ±0.5→0, 1.5→2, ±126.5→±126
  const int8_t want_ties[] = {127, 2, 4, -2, -4, 0, 0, 2, 126, -126};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(c.code(1, 7, 2, i), want_ties[i]) << "tie " << ties[i];
  for (int64_t h = 0; h < nkv; ++h) EXPECT_EQ(c.scale(0, 3, h), 0.0f);  // the skipped token's slot stays untouched
}

TEST_P(Int8Kv, ScalarAndAvx2WriteTheSameBits) {
  auto scalar = make_cpu_backend({1, CpuSimd::kScalar});
  const int64_t nkv = 2, hd = 37, T = 9;  // odd head_dim: vector body + scalar tail
  HostTensor k = random_tensor({T, nkv, hd}, rng, -5, 5), v = random_tensor({T, nkv, hd}, rng, -1e-3f, 1e-3f);
  std::vector<int32_t> slots(T);
  std::iota(slots.begin(), slots.end(), 0);
  OwnedKvLayer a(*be, DType::kI8, 1, 16, nkv, hd), b(*scalar, DType::kI8, 1, 16, nkv, hd);
  be->kv_write(a.layer, k.view(), v.view(), slots);
  scalar->kv_write(b.layer, k.view(), v.view(), slots);
  for (size_t i = 0; i < a.buffers.size(); ++i)
    EXPECT_EQ(std::memcmp(a.buffers[i].data(), b.buffers[i].data(), a.buffers[i].bytes), 0) << "buffer " << i;
}

struct AttnCase {
  std::vector<int64_t> ctx, n_new;
  int64_t nh, nkv, hd, block_size;
};

struct AttnRun {
  std::vector<float> out;
  ref::Vec want_stored;  // reference attention over the values the cache holds (i8: code · scale, in f32)
};

// Writes S sequences' K/V into a paged cache (history in two writes, blocks shuffled when `scatter`), attends the
// last n_new tokens of each, and computes the double-precision reference over the stored values.
AttnRun run_paged(Backend& be, const AttnCase& c, DType dtype, bool scatter, std::mt19937 rng) {
  const int64_t S = static_cast<int64_t>(c.ctx.size());
  int64_t max_blocks = 0, total = 0;
  for (int64_t x : c.ctx) {
    max_blocks = std::max(max_blocks, (x + c.block_size - 1) / c.block_size);
    total += (x + c.block_size - 1) / c.block_size;
  }
  const int64_t pool = total + 3;
  std::vector<int32_t> ids(static_cast<size_t>(pool));
  std::iota(ids.begin(), ids.end(), 0);
  if (scatter) {
    std::mt19937 shuffle_rng = rng;
    std::shuffle(ids.begin(), ids.end(), shuffle_rng);
  }
  OwnedKvLayer cache(be, dtype, pool, c.block_size, c.nkv, c.hd);
  std::vector<int32_t> table(static_cast<size_t>(S * max_blocks), -1), q_start{0}, seq_len;
  std::vector<std::vector<int32_t>> seq_slots;
  size_t next = 0;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t ctx = c.ctx[static_cast<size_t>(s)];
    for (int64_t b = 0; b * c.block_size < ctx; ++b) table[static_cast<size_t>(s * max_blocks + b)] = ids[next++];
    HostTensor k = random_tensor({ctx, c.nkv, c.hd}, rng, -1, 1), v = random_tensor({ctx, c.nkv, c.hd}, rng, -1, 1);
    std::vector<int32_t> slots(static_cast<size_t>(ctx));
    for (int64_t p = 0; p < ctx; ++p)
      slots[static_cast<size_t>(p)] = table[static_cast<size_t>(s * max_blocks + p / c.block_size)] *
                                          static_cast<int32_t>(c.block_size) + static_cast<int32_t>(p % c.block_size);
    const int64_t split = ctx / 2;  // a prompt chunk, then the rest
    for (auto [t0, t1] : {std::pair{int64_t{0}, split}, std::pair{split, ctx}}) {
      if (t1 == t0) continue;
      be.kv_write(cache.layer, k.view().slice0(t0, t1), v.view().slice0(t0, t1),
                  std::span(slots).subspan(static_cast<size_t>(t0), static_cast<size_t>(t1 - t0)));
    }
    seq_slots.push_back(slots);
    q_start.push_back(q_start.back() + static_cast<int32_t>(c.n_new[static_cast<size_t>(s)]));
    seq_len.push_back(static_cast<int32_t>(ctx));
  }
  const int64_t T = q_start.back();
  HostTensor q = random_tensor({T, c.nh, c.hd}, rng, -2, 2), out({T, c.nh, c.hd});
  const float scale = 1.0f / std::sqrt(float(c.hd));
  be.attention(out.view(), q.view(), cache.layer, PagedKv{q_start, seq_len, table, static_cast<int32_t>(max_blocks)},
               scale);
  AttnRun r{out.values, {}};
  for (int64_t s = 0; s < S; ++s) {
    const int64_t ctx = c.ctx[static_cast<size_t>(s)], n = c.n_new[static_cast<size_t>(s)];
    std::vector<float> kr(static_cast<size_t>(ctx * c.nkv * c.hd)), vr(kr.size());
    for (int64_t p = 0; p < ctx; ++p)
      for (int64_t h = 0; h < c.nkv; ++h)
        for (int64_t d = 0; d < c.hd; ++d) {
          const size_t i = static_cast<size_t>((p * c.nkv + h) * c.hd + d);
          kr[i] = cache.value(0, seq_slots[static_cast<size_t>(s)][static_cast<size_t>(p)], h, d);
          vr[i] = cache.value(1, seq_slots[static_cast<size_t>(s)][static_cast<size_t>(p)], h, d);
        }
    std::vector<float> qs(q.values.begin() + q_start[static_cast<size_t>(s)] * c.nh * c.hd,
                          q.values.begin() + q_start[static_cast<size_t>(s + 1)] * c.nh * c.hd);
    const ref::Vec o = ref::attention(qs, kr, vr, n, ctx, c.nh, c.nkv, c.hd, scale);
    r.want_stored.insert(r.want_stored.end(), o.begin(), o.end());
  }
  return r;
}

// GQA 3:1, four sequences (decode, short prefill, a prefill crossing blocks, one exactly a block), head_dim with an
// 8-wide tail.
const AttnCase kGqa{{37, 5, 70, 16}, {1, 5, 16, 3}, 6, 2, 40, 16};

TEST_P(Int8Kv, AttentionMatchesTheDequantizedReferenceTightly) {
  const AttnRun r = run_paged(*be, kGqa, DType::kI8, true, rng);
  EXPECT_LT(rel_err(r.out, r.want_stored), 3e-6);
}

TEST_P(Int8Kv, AttentionStaysNearF32AttentionWithinTheQuantizationError) {
  const AttnRun i8 = run_paged(*be, kGqa, DType::kI8, true, rng);
  const AttnRun f32 = run_paged(*be, kGqa, DType::kF32, true, rng);  // same rng copy: same K, V, q
  const double err = rel_err(i8.out, f32.want_stored);
  // Codes carry |error| ≤ scale / 2 = amax / 254 per element (0.4 % of the row's largest value); the outputs,
  // softmax-weighted averages of V with perturbed weights, stay within ~1 %. Zero would mean no quantization.
  EXPECT_LT(err, 1e-2);
  EXPECT_GT(err, 1e-5);
}

TEST_P(Int8Kv, ScatteredBlocksEqualContiguous) {
  const AttnCase c{{45, 100, 3}, {45, 1, 2}, 4, 4, 16, 8};  // MHA, block size 8
  const auto scattered = run_paged(*be, c, DType::kI8, true, rng);
  const auto contiguous = run_paged(*be, c, DType::kI8, false, rng);
  EXPECT_EQ(scattered.out, contiguous.out);
  EXPECT_LT(rel_err(scattered.out, scattered.want_stored), 3e-6);
}

TEST_P(Int8Kv, ChunkedWritesAttendLikeOneWrite) {
  // The same sequence attended as 3 prefill chunks (write chunk, attend chunk) and as one: per-token scales make
  // every stored row independent of what else is written, so the outputs agree to rounding.
  const int64_t nkv = 2, nh = 4, hd = 32, ctx = 50;
  HostTensor k = random_tensor({ctx, nkv, hd}, rng), v = random_tensor({ctx, nkv, hd}, rng);
  HostTensor q = random_tensor({ctx, nh, hd}, rng, -2, 2), whole({ctx, nh, hd}), chunked({ctx, nh, hd});
  std::vector<int32_t> table{3, 0, 2, 1}, slots(ctx);
  for (int64_t p = 0; p < ctx; ++p) slots[static_cast<size_t>(p)] = table[static_cast<size_t>(p / 16)] * 16 + p % 16;
  OwnedKvLayer a(*be, DType::kI8, 4, 16, nkv, hd), b(*be, DType::kI8, 4, 16, nkv, hd);
  std::vector<int32_t> q_start{0, static_cast<int32_t>(ctx)}, len{static_cast<int32_t>(ctx)};
  be->kv_write(a.layer, k.view(), v.view(), slots);
  be->attention(whole.view(), q.view(), a.layer, PagedKv{q_start, len, table, 4}, 0.2f);
  for (auto [t0, t1] : {std::pair{0, 17}, std::pair{17, 18}, std::pair{18, 50}}) {
    auto sub = std::span(slots).subspan(static_cast<size_t>(t0), static_cast<size_t>(t1 - t0));
    be->kv_write(b.layer, k.view().slice0(t0, t1), v.view().slice0(t0, t1), sub);
    std::vector<int32_t> qs{0, t1 - t0}, l{t1};
    be->attention(chunked.view().slice0(t0, t1), q.view().slice0(t0, t1), b.layer, PagedKv{qs, l, table, 4}, 0.2f);
  }
  for (size_t i = 0; i < a.buffers.size(); ++i)
    EXPECT_EQ(std::memcmp(a.buffers[i].data(), b.buffers[i].data(), a.buffers[i].bytes), 0) << "buffer " << i;
  EXPECT_EQ(whole.values, chunked.values);
}

using testing::error_of;

TEST_P(Int8Kv, MissingOrMisshapenScalesAreRefusedNamingOpAndTensor) {
  const int64_t nkv = 2, hd = 16;
  OwnedKvLayer c(*be, DType::kI8, 2, 8, nkv, hd);
  OwnedKvLayer f(*be, DType::kF32, 2, 8, nkv, hd);
  HostTensor k = random_tensor({1, nkv, hd}, rng), v = random_tensor({1, nkv, hd}, rng);
  HostTensor q = random_tensor({1, 4, hd}, rng), out({1, 4, hd});
  const std::vector<int32_t> slots{0}, q_start{0, 1}, len{1}, table{0};
  const PagedKv kv{q_start, len, table, 1};
  auto write = [&](const KvLayer& l) { return error_of([&] { be->kv_write(l, k.view(), v.view(), slots); }); };
  auto attend = [&](const KvLayer& l) { return error_of([&] { be->attention(out.view(), q.view(), l, kv, 0.25f); }); };
  auto expect_names = [](const std::string& msg, const char* op, const char* tensor) {
    EXPECT_NE(msg.find(op), std::string::npos) << msg;
    EXPECT_NE(msg.find(tensor), std::string::npos) << msg;
  };

  KvLayer no_k_scale = c.layer;
  no_k_scale.k_scale = {};
  expect_names(write(no_k_scale), "kv_write", "k_scale is missing");
  expect_names(attend(no_k_scale), "attention", "k_scale is missing");

  KvLayer bad_v_scale = c.layer;  // [2, 8, 1] instead of [2, 8, 2]
  bad_v_scale.v_scale = Tensor::make(c.layer.v_scale.data, DType::kF32, {2, 8, 1});
  expect_names(write(bad_v_scale), "kv_write", "v_scale must be [2,8,2]");
  expect_names(attend(bad_v_scale), "attention", "v_scale must be [2,8,2]");

  KvLayer bf16_scale = c.layer;
  bf16_scale.k_scale.dtype = DType::kBF16;
  expect_names(write(bf16_scale), "kv_write", "k_scale must be f32");

  KvLayer f32_with_scale = f.layer;  // a float cache takes no scales
  f32_with_scale.v_scale = c.layer.v_scale;
  expect_names(write(f32_with_scale), "kv_write", "v_scale is given");
  expect_names(attend(f32_with_scale), "attention", "v_scale is given");

  KvLayer mixed = c.layer;  // i8 K with f32 V
  mixed.v = f.layer.v;
  expect_names(write(mixed), "kv_write", "differ in dtype");

  HostTensor bad = random_tensor({1, nkv, hd}, rng);
  bad.values[5] = std::numeric_limits<float>::infinity();
  expect_names(error_of([&] { be->kv_write(c.layer, k.view(), bad.view(), slots); }), "kv_write", "v row of token 0");
  bad.values[5] = std::numeric_limits<float>::quiet_NaN();
  expect_names(error_of([&] { be->kv_write(c.layer, bad.view(), v.view(), slots); }), "kv_write", "k row of token 0");
}

INSTANTIATE_TEST_SUITE_P(Cpu, Int8Kv, ::testing::ValuesIn(backend_configs()),
                         [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace ninfer::testing
