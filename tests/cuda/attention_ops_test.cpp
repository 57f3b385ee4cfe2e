// The CUDA paged-KV ops against the CPU oracle: kv_write bit for bit (cache and scale bytes, every cache dtype), its
// non-finite int8 fault raised at synchronize(), and paged causal GQA attention (head_dim 48/80/128/256 and odd
// ones, GQA 1-16, decode / prefill / empty sequences in one batch, permuted block tables, split-K long contexts,
// f32/bf16/f16/i8 caches) within the tolerances of docs/cuda-backend.md.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/cuda/cuda_test_support.h"

namespace ninfer::testing {
namespace {

constexpr DType kCacheDtypes[] = {DType::kF32, DType::kBF16, DType::kF16, DType::kI8};

// Attention outputs are convex combinations of V rows (|v| <= 1 here): both backends read the same cache values, so
// the only differences are f32 summation orders (dot products, softmax sums, split-K merges).
constexpr double kAttnAtol = 1e-5, kAttnRtol = 1e-5;

// f() throws an Error whose message names `op` and `what`.
template <typename F>
void expect_error_naming(const char* op, const char* what, F&& f) {
  try {
    f();
    ADD_FAILURE() << "expected an Error naming " << op << " and " << what;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

// One KV layer held twice with the same bytes: host memory for the CPU oracle and device memory for the GPU.
struct KvPair {
  DType dt;
  int64_t nb, bs, nkv, hd;
  std::vector<uint8_t> hk, hv;
  std::vector<float> hks, hvs;
  DeviceTensor dk, dv, dks, dvs;

  KvPair(DType dtype, int64_t blocks, int64_t block_size, int64_t n_kv, int64_t head_dim)
      : dt(dtype), nb(blocks), bs(block_size), nkv(n_kv), hd(head_dim) {
    const size_t n = static_cast<size_t>(nb * bs * nkv * hd) * dtype_element_bytes(dt);
    hk.assign(n, 0);
    hv.assign(n, 0);
    dk = device_alloc(dt, {nb, bs, nkv, hd});
    dv = device_alloc(dt, {nb, bs, nkv, hd});
    if (dt == DType::kI8) {
      hks.assign(static_cast<size_t>(nb * bs * nkv), 0.0f);
      hvs.assign(static_cast<size_t>(nb * bs * nkv), 0.0f);
      dks = device_alloc(DType::kF32, {nb, bs, nkv});
      dvs = device_alloc(DType::kF32, {nb, bs, nkv});
    }
  }
  KvLayer cpu() {
    KvLayer l{Tensor::make(hk.data(), dt, {nb, bs, nkv, hd}), Tensor::make(hv.data(), dt, {nb, bs, nkv, hd}), {}, {}};
    if (dt == DType::kI8) {
      l.k_scale = Tensor::make(hks.data(), DType::kF32, {nb, bs, nkv});
      l.v_scale = Tensor::make(hvs.data(), DType::kF32, {nb, bs, nkv});
    }
    return l;
  }
  KvLayer gpu_layer() {
    KvLayer l{dk.t, dv.t, {}, {}};
    if (dt == DType::kI8) {
      l.k_scale = dks.t;
      l.v_scale = dvs.t;
    }
    return l;
  }
  // The same write on both backends.
  void write(HostTensor& k, HostTensor& v, const std::vector<int32_t>& slots) {
    cpu_oracle().kv_write(cpu(), k.view(), v.view(), slots);
    DeviceTensor kd = to_device(k), vd = to_device(v);
    gpu().kv_write(gpu_layer(), kd.t, vd.t, slots);
    gpu().synchronize();
  }
  // Cache and scale bytes equal on both sides.
  void expect_same_bytes(const std::string& what) {
    EXPECT_TRUE(to_host_bytes(dk.t) == hk) << what << ": K cache bytes differ";
    EXPECT_TRUE(to_host_bytes(dv.t) == hv) << what << ": V cache bytes differ";
    if (dt == DType::kI8) {
      const auto bytes = [](const std::vector<float>& f) {
        std::vector<uint8_t> b(f.size() * sizeof(float));
        std::memcpy(b.data(), f.data(), b.size());
        return b;
      };
      EXPECT_TRUE(to_host_bytes(dks.t) == bytes(hks)) << what << ": k_scale bytes differ";
      EXPECT_TRUE(to_host_bytes(dvs.t) == bytes(hvs)) << what << ": v_scale bytes differ";
    }
  }
};

// ---------------------------------------------------------------------------------------------------------------
// kv_write

// Rows with the edge cases of the int8 rule: all zero, denormal-sized (amax / 127 tiny but > 0), huge, exact ties
// of x / scale, and values that round differently to bf16/f16.
void fill_kv_rows(HostTensor& t, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t T = t.shape[0], nkv = t.shape[1], hd = t.shape[2];
  for (int64_t r = 0; r < T * nkv; ++r) {
    float* row = t.values.data() + r * hd;
    const int kind = static_cast<int>(r % 6);
    for (int64_t d = 0; d < hd; ++d) {
      float x = u(rng);
      if (kind == 1) x = 0.0f;
      if (kind == 2) x *= 1e-38f;
      if (kind == 3) x *= 6e4f;
      if (kind == 4) x = static_cast<float>(static_cast<int>(d % 255) - 127) * 0.5f;  // codes with .5 ties
      if (kind == 5) x = (d % 2 ? -1.0f : 1.0f) * (1.0f + static_cast<float>(d) * 0x1p-9f);  // bf16 ties
      row[d] = x;
    }
  }
}

TEST(CudaAttentionOps, KvWriteSmallBitExactEveryDtype) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(11);
  for (DType dt : kCacheDtypes)
    for (int64_t hd : {int64_t{48}, int64_t{80}, int64_t{128}, int64_t{256}, int64_t{7}}) {
      const int64_t nb = 6, bs = 4, nkv = 2, T = 13;
      KvPair c(dt, nb, bs, nkv, hd);
      HostTensor k({T, nkv, hd}), v({T, nkv, hd});
      fill_kv_rows(k, rng);
      fill_kv_rows(v, rng);
      std::vector<int32_t> slots(static_cast<size_t>(nb * bs));
      std::iota(slots.begin(), slots.end(), 0);
      std::shuffle(slots.begin(), slots.end(), rng);
      slots.resize(static_cast<size_t>(T));
      slots[3] = -1;  // skipped
      slots[9] = -5;
      c.write(k, v, slots);
      c.expect_same_bytes(std::string(dtype_name(dt)) + " hd " + std::to_string(hd));
    }
}

TEST(CudaAttentionOps, KvWriteSmallStridedRowsAndChunks) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(12);
  for (DType dt : kCacheDtypes) {
    const int64_t nb = 5, bs = 16, nkv = 4, hd = 128, T = 37;
    KvPair c(dt, nb, bs, nkv, hd);
    // k and v as per-head views of wider rows ([T, nkv, hd] with head stride hd + 8).
    HostTensor kw = random_tensor({T, nkv, hd + 8}, rng, -3, 3), vw = random_tensor({T, nkv, hd + 8}, rng, -3, 3);
    const Tensor kh = Tensor::strided(kw.values.data(), DType::kF32, {T, nkv, hd}, {nkv * (hd + 8), hd + 8, 1});
    const Tensor vh = Tensor::strided(vw.values.data(), DType::kF32, {T, nkv, hd}, {nkv * (hd + 8), hd + 8, 1});
    std::vector<int32_t> slots(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) slots[static_cast<size_t>(t)] = static_cast<int32_t>((t * 7) % (nb * bs));
    cpu_oracle().kv_write(c.cpu(), kh, vh, slots);
    DeviceTensor kd = device_alloc(DType::kF32, {T, nkv, hd}, {nkv * (hd + 8), hd + 8, 1});
    DeviceTensor vd = device_alloc(DType::kF32, {T, nkv, hd}, {nkv * (hd + 8), hd + 8, 1});
    gpu().copy(kd.t, kh);
    gpu().copy(vd.t, vh);
    // in two chunks (a row depends only on itself)
    const std::vector<int32_t> s0(slots.begin(), slots.begin() + 20), s1(slots.begin() + 20, slots.end());
    gpu().kv_write(c.gpu_layer(), kd.t.slice0(0, 20), vd.t.slice0(0, 20), s0);
    gpu().kv_write(c.gpu_layer(), kd.t.slice0(20, T), vd.t.slice0(20, T), s1);
    gpu().synchronize();
    c.expect_same_bytes(std::string(dtype_name(dt)));
  }
}

// A non-finite row in an i8 cache: the CPU throws at once; the GPU records it and throws at synchronize() (or at
// the op itself with NINFER_CUDA_SYNC), naming kv_write, K or V, the token and the kv head.
TEST(CudaAttentionOps, KvWriteSmallNonFiniteInt8RowFaults) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(13);
  struct Bad {
    bool in_v;
    int64_t token, head;
    float value;
    const char* side;
  };
  for (const Bad b : {Bad{true, 3, 1, NAN, "V"}, Bad{false, 5, 0, INFINITY, "K"}}) {
    const int64_t nkv = 2, hd = 64, T = 8;
    KvPair c(DType::kI8, 4, 4, nkv, hd);
    HostTensor k = random_tensor({T, nkv, hd}, rng), v = random_tensor({T, nkv, hd}, rng);
    (b.in_v ? v : k).values[static_cast<size_t>((b.token * nkv + b.head) * hd + 17)] = b.value;
    std::vector<int32_t> slots(static_cast<size_t>(T));
    std::iota(slots.begin(), slots.end(), 2);
    EXPECT_THROW(cpu_oracle().kv_write(c.cpu(), k.view(), v.view(), slots), Error);
    DeviceTensor kd = to_device(k), vd = to_device(v);
    std::string msg;
    try {
      gpu().kv_write(c.gpu_layer(), kd.t, vd.t, slots);
      gpu().synchronize();
    } catch (const Error& e) {
      msg = e.what();
    }
    ASSERT_FALSE(msg.empty()) << "a non-finite " << b.side << " row must raise an Error by synchronize()";
    EXPECT_NE(msg.find("kv_write"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string(b.side) + " row"), std::string::npos) << msg;
    EXPECT_NE(msg.find("token " + std::to_string(b.token)), std::string::npos) << msg;
    EXPECT_NE(msg.find("kv head " + std::to_string(b.head)), std::string::npos) << msg;
    EXPECT_NO_THROW(gpu().synchronize()) << "the fault is raised once";
    // float caches store inf/NaN as they are
    KvPair f(DType::kF16, 4, 4, nkv, hd);
    f.write(k, v, slots);
    f.expect_same_bytes("f16 with a non-finite value");
  }
}

TEST(CudaAttentionOps, KvWriteSmallRejectsBadArguments) {
  NINFER_REQUIRE_CUDA();
  const int64_t nkv = 2, hd = 16, T = 3;
  KvPair c(DType::kI8, 2, 4, nkv, hd);
  DeviceTensor k = device_alloc(DType::kF32, {T, nkv, hd}), v = device_alloc(DType::kF32, {T, nkv, hd});
  const auto expect_error = [](auto&& f, const char* what) { expect_error_naming("kv_write", what, f); };
  const std::vector<int32_t> beyond{0, 8, 1};  // 2 blocks of 4: slot 8 is block 2
  expect_error([&] { gpu().kv_write(c.gpu_layer(), k.t, v.t, beyond); }, "slot 8");
  const std::vector<int32_t> ok{0, 1, 2};
  KvLayer no_scale = c.gpu_layer();
  no_scale.v_scale = {};
  expect_error([&] { gpu().kv_write(no_scale, k.t, v.t, ok); }, "v_scale");
  KvPair f(DType::kF32, 2, 4, nkv, hd);
  KvLayer extra = f.gpu_layer();
  extra.k_scale = c.dks.t;
  expect_error([&] { gpu().kv_write(extra, k.t, v.t, ok); }, "k_scale");
  const std::vector<int32_t> two{0, 1};
  expect_error([&] { gpu().kv_write(c.gpu_layer(), k.t, v.t, two); }, "k");
  HostTensor host_k({T, nkv, hd});
  expect_error([&] { gpu().kv_write(c.gpu_layer(), host_k.view(), v.t, ok); }, "k");
  gpu().synchronize();
}

// ---------------------------------------------------------------------------------------------------------------
// attention

struct Seq {
  int64_t prior, n_new;  // cached tokens before this step, rows this step brings
};
struct AttnCase {
  std::vector<Seq> seqs;
  int64_t nh, nkv, hd, bs;
  bool strided_q = false;  // q as the per-head view of a wider projection (the forward's [q | gate] layout)
};

std::string describe(const AttnCase& c, DType dt) {
  std::string s = fmt::format("{} nh {} nkv {} hd {} bs {} seqs", dtype_name(dt), c.nh, c.nkv, c.hd, c.bs);
  for (const Seq& q : c.seqs) s += fmt::format(" {}+{}", q.prior, q.n_new);
  return s;
}

// Fills both caches through kv_write (the prior context per sequence, then this step's rows of all sequences in
// one write, as the forward does), runs attention on both backends and compares.
void check_attention_case(const AttnCase& c, DType dt, std::mt19937& rng) {
  const int64_t S = static_cast<int64_t>(c.seqs.size());
  int64_t max_blocks = 0, total_blocks = 0;
  for (const Seq& s : c.seqs) {
    const int64_t nb = (s.prior + s.n_new + c.bs - 1) / c.bs;
    max_blocks = std::max(max_blocks, nb);
    total_blocks += nb;
  }
  max_blocks += 1;  // a spare column (never read)
  const int64_t pool = total_blocks + 5;
  std::vector<int32_t> ids(static_cast<size_t>(pool));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  KvPair cache(dt, pool, c.bs, c.nkv, c.hd);
  std::vector<int32_t> table(static_cast<size_t>(S * max_blocks), -1), q_start{0}, seq_len;
  size_t next = 0;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t ctx = c.seqs[static_cast<size_t>(s)].prior + c.seqs[static_cast<size_t>(s)].n_new;
    for (int64_t b = 0; b * c.bs < ctx; ++b) table[static_cast<size_t>(s * max_blocks + b)] = ids[next++];
    q_start.push_back(q_start.back() + static_cast<int32_t>(c.seqs[static_cast<size_t>(s)].n_new));
    seq_len.push_back(static_cast<int32_t>(ctx));
  }
  const auto slot_of = [&](int64_t s, int64_t p) {
    return table[static_cast<size_t>(s * max_blocks + p / c.bs)] * static_cast<int32_t>(c.bs) +
           static_cast<int32_t>(p % c.bs);
  };
  for (int64_t s = 0; s < S; ++s) {
    const int64_t prior = c.seqs[static_cast<size_t>(s)].prior;
    if (prior == 0) continue;
    HostTensor k = random_tensor({prior, c.nkv, c.hd}, rng), v = random_tensor({prior, c.nkv, c.hd}, rng);
    std::vector<int32_t> slots(static_cast<size_t>(prior));
    for (int64_t p = 0; p < prior; ++p) slots[static_cast<size_t>(p)] = slot_of(s, p);
    cache.write(k, v, slots);
  }
  const int64_t T = q_start.back();
  if (T > 0) {
    HostTensor k = random_tensor({T, c.nkv, c.hd}, rng), v = random_tensor({T, c.nkv, c.hd}, rng);
    std::vector<int32_t> slots;
    for (int64_t s = 0; s < S; ++s)
      for (int64_t i = 0; i < c.seqs[static_cast<size_t>(s)].n_new; ++i)
        slots.push_back(slot_of(s, c.seqs[static_cast<size_t>(s)].prior + i));
    cache.write(k, v, slots);
  }
  cache.expect_same_bytes(describe(c, dt));

  // q: contiguous [T, nh, hd], or the first half of each head of [T, nh, 2·hd]
  const int64_t per_head = c.strided_q ? 2 * c.hd : c.hd;
  HostTensor qw = random_tensor({std::max<int64_t>(T, 1), c.nh, per_head}, rng, -2, 2);
  const Tensor qh = Tensor::strided(qw.values.data(), DType::kF32, {T, c.nh, c.hd}, {c.nh * per_head, per_head, 1});
  // (allocated with at least one row; a batch without rows then views zero of them)
  DeviceTensor qd = device_alloc(DType::kF32, {std::max<int64_t>(T, 1), c.nh, c.hd}, {c.nh * per_head, per_head, 1});
  DeviceTensor got = device_alloc(DType::kF32, {std::max<int64_t>(T, 1), c.nh, c.hd});
  qd.t.shape[0] = T;
  got.t.shape[0] = T;
  if (T > 0) gpu().copy(qd.t, qh);
  HostTensor want({T, c.nh, c.hd});
  const PagedKv kv{q_start, seq_len, table, static_cast<int32_t>(max_blocks)};
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.hd));
  cpu_oracle().attention(want.view(), qh, cache.cpu(), kv, scale);
  gpu().attention(got.t, qd.t, cache.gpu_layer(), kv, scale);
  gpu().synchronize();
  EXPECT_TRUE(all_close(to_host_f32(got.t), want.values, kAttnAtol, kAttnRtol)) << describe(c, dt);
}

TEST(CudaAttentionOps, AttentionSmallDecodeAndPrefill) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(21);
  for (DType dt : kCacheDtypes) {
    check_attention_case({{{9, 1}, {0, 5}, {3, 0}, {20, 2}}, 8, 2, 64, 16}, dt, rng);
    check_attention_case({{{600, 1}, {5, 1}}, 8, 2, 64, 16}, dt, rng);  // decode shape, split-K + combine
  }
}

// Every head_dim the model family uses, GQA ratios 1/2/4/8, every cache dtype, one batch mixing a fresh prefill
// (17 rows), a decode row on prior context, a sequence without new rows and a chunked prefill on prior context.
TEST(CudaAttentionOps, AttentionHeadDimsGqaDtypes) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(22);
  for (int64_t hd : {int64_t{48}, int64_t{80}, int64_t{128}, int64_t{256}})
    for (int64_t g : {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}})
      for (DType dt : kCacheDtypes)
        check_attention_case({{{0, 17}, {40, 1}, {300, 0}, {23, 6}}, 2 * g, 2, hd, 16}, dt, rng);
}

// Decode-only batches (the launch shapes where warps split the keys of a small tile) with long contexts that split-K
// divides, and a short multi-row verify on a long context.
TEST(CudaAttentionOps, AttentionDecodeSplitK) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(23);
  for (int64_t hd : {int64_t{128}, int64_t{256}})
    for (int64_t g : {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}})
      for (DType dt : kCacheDtypes) {
        check_attention_case({{{3000, 1}}, 2 * g, 2, hd, 16}, dt, rng);
        check_attention_case({{{1, 1}, {700, 1}, {64, 1}, {2047, 1}}, 2 * g, 2, hd, 16}, dt, rng);
      }
  for (DType dt : kCacheDtypes) check_attention_case({{{2000, 4}}, 16, 4, 256, 16}, dt, rng);
}

// 300 new rows (prefill, fresh and on prior context) for every dtype.
TEST(CudaAttentionOps, AttentionLongPrefill) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(24);
  for (DType dt : kCacheDtypes) {
    check_attention_case({{{0, 300}, {100, 300}}, 8, 2, 128, 16}, dt, rng);
    check_attention_case({{{0, 300}, {57, 1}}, 8, 4, 256, 16}, dt, rng);
  }
}

// Shapes off the common path: block sizes that are not a power of two (and 1), head dims that are not a multiple of 4
// (scalar loads) or above 256 (512), GQA 16 and 3, q strided as the forward's [q | gate] projection.
TEST(CudaAttentionOps, AttentionOddShapes) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(25);
  for (DType dt : kCacheDtypes) {
    check_attention_case({{{30, 3}, {0, 1}, {77, 0}, {12, 40}}, 4, 2, 80, 5}, dt, rng);
    check_attention_case({{{9, 2}, {0, 7}}, 2, 1, 32, 1}, dt, rng);
    check_attention_case({{{10, 3}, {50, 1}}, 6, 2, 38, 16}, dt, rng);  // head_dim % 4 != 0: scalar loads
    check_attention_case({{{5, 9}, {300, 1}}, 3, 1, 100, 8}, dt, rng);
    check_attention_case({{{40, 2}, {333, 1}}, 4, 2, 512, 16}, dt, rng);
    check_attention_case({{{20, 3}, {500, 1}}, 16, 1, 128, 16}, dt, rng);
    check_attention_case({{{20, 19}, {60, 1}}, 8, 2, 256, 16, /*strided_q=*/true}, dt, rng);
    check_attention_case({{{0, 0}, {4, 0}}, 4, 2, 64, 16}, dt, rng);  // no rows at all
  }
}

TEST(CudaAttentionOps, AttentionSmallRejectsBadArguments) {
  NINFER_REQUIRE_CUDA();
  const int64_t nkv = 1, hd = 16;
  KvPair c(DType::kF32, 4, 8, nkv, hd);
  DeviceTensor q = device_alloc(DType::kF32, {2, 2, hd}), out = device_alloc(DType::kF32, {2, 2, hd});
  const auto expect_error = [](auto&& f, const char* what) { expect_error_naming("attention", what, f); };
  const std::vector<int32_t> q_start{0, 2}, seq_len{10}, table{0, 7}, short_len{1}, good_table{0, 1};
  expect_error([&] { gpu().attention(out.t, q.t, c.gpu_layer(), PagedKv{q_start, seq_len, table, 2}, 0.25f); }, "-> 7");
  expect_error([&] { gpu().attention(out.t, q.t, c.gpu_layer(), PagedKv{q_start, short_len, good_table, 2}, 0.25f); },
               "new tokens");
  expect_error([&] { gpu().attention(out.t, q.t, c.gpu_layer(), PagedKv{q_start, seq_len, good_table, 1}, 0.25f); },
               "needs 2 blocks");
  DeviceTensor q3 = device_alloc(DType::kF32, {2, 3, hd}), out3 = device_alloc(DType::kF32, {2, 3, hd});
  KvPair c2(DType::kF32, 4, 8, 2, hd);
  expect_error([&] { gpu().attention(out3.t, q3.t, c2.gpu_layer(), PagedKv{q_start, seq_len, good_table, 2}, 0.25f); },
               "multiple");
  DeviceTensor q_wide = device_alloc(DType::kF32, {2, 2, 32});
  expect_error([&] { gpu().attention(out.t, q_wide.t, c.gpu_layer(), PagedKv{q_start, seq_len, good_table, 2}, 0.25f); },
               "out");
  HostTensor host_q({2, 2, hd});
  expect_error([&] { gpu().attention(out.t, host_q.view(), c.gpu_layer(), PagedKv{q_start, seq_len, good_table, 2}, 0.25f); },
               "q");
  KvPair big(DType::kF32, 2, 8, 1, 520);
  DeviceTensor qb = device_alloc(DType::kF32, {2, 1, 520}), ob = device_alloc(DType::kF32, {2, 1, 520});
  try {
    gpu().attention(ob.t, qb.t, big.gpu_layer(), PagedKv{q_start, seq_len, good_table, 2}, 0.25f);
    ADD_FAILURE() << "head_dim 520 is above what the cuda kernels take";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << e.what();
  }
  gpu().synchronize();
}

}  // namespace
}  // namespace ninfer::testing
