// The NCCL communicator on device tensors: one rank on GPU 0 (all_reduce leaves the data as it is, all_gather copies
// through both of its paths, broadcast from root 0; strided rows keep their padding), two ranks on GPUs 0 and 1 when
// two are visible (else SKIPPED saying so) with the sharded forward at TP2 over them, and the device lists a group
// refuses. Skipped without a GPU, like the op suite; check.sh runs the two-GPU tests (NcclMultiGpu.*) in a step of
// their own, only where two GPUs are listed.
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <thread>

#include "engine/parallel/nccl_communicator.h"
#include "tests/cuda/cuda_test_support.h"
#include "tests/cuda/tp_cuda_model.h"

namespace ninfer::testing {
namespace {

constexpr float kPad = -777.0f;  // the padding of strided rows, which no collective may touch

// A device [R, N] f32 matrix at row stride S >= N, with its whole storage (padding included) readable back.
struct DevMat {
  Buffer buffer;
  Tensor t;
  int64_t R = 0, N = 0, S = 0;
};

DevMat dev_mat(Backend& b, int64_t R, int64_t N, int64_t S, const std::vector<float>& rows) {
  DevMat m{b.alloc(static_cast<size_t>(R * S) * 4), {}, R, N, S};
  std::vector<float> full(static_cast<size_t>(R * S), kPad);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < N; ++c) full[static_cast<size_t>(r * S + c)] = rows[static_cast<size_t>(r * N + c)];
  b.copy(Tensor::make(m.buffer.data(), DType::kF32, {R, S}, Device::kCuda),
         Tensor::make(full.data(), DType::kF32, {R, S}));
  b.synchronize();
  m.t = Tensor::strided(m.buffer.data(), DType::kF32, {R, N}, {S, 1}, Device::kCuda);
  return m;
}

// The rows [R, N] of m, and whether every padding element is still kPad.
std::vector<float> read_rows(Backend& b, const DevMat& m, bool* padding_intact = nullptr) {
  std::vector<float> full(static_cast<size_t>(m.R * m.S));
  b.copy(Tensor::make(full.data(), DType::kF32, {m.R, m.S}),
         Tensor::make(m.buffer.data(), DType::kF32, {m.R, m.S}, Device::kCuda));
  b.synchronize();
  std::vector<float> rows;
  bool intact = true;
  for (int64_t r = 0; r < m.R; ++r)
    for (int64_t c = 0; c < m.S; ++c) {
      const float v = full[static_cast<size_t>(r * m.S + c)];
      if (c < m.N) rows.push_back(v);
      else intact = intact && v == kPad;
    }
  if (padding_intact) *padding_intact = intact;
  return rows;
}

// Distinct values per rank, exactly representable, so sums of two are exact.
std::vector<float> values(int64_t n, int rank) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(rank + 1) * 0.5f + 0.25f * static_cast<float>(i);
  return v;
}

struct Layout {
  int64_t R, N, S;
};
constexpr Layout kLayouts[] = {{3, 5, 5}, {3, 5, 8}, {1, 7, 7}};  // contiguous, strided, one row

TEST(NcclSingleRank, AllReduceLeavesDataUnchanged) {
  NINFER_REQUIRE_NCCL();
  auto group = make_nccl_group({0});
  ASSERT_EQ(group->size(), 1);
  Communicator& c = group->rank(0);
  for (const Layout& l : kLayouts) {
    const std::vector<float> v = values(l.R * l.N, 0);
    DevMat x = dev_mat(gpu(), l.R, l.N, l.S, v);
    c.all_reduce_sum(x.t, gpu());
    bool pad = false;
    EXPECT_EQ(read_rows(gpu(), x, &pad), v) << "[" << l.R << ", " << l.N << "] stride " << l.S;
    EXPECT_TRUE(pad) << "padding written, stride " << l.S;
  }
}

TEST(NcclSingleRank, AllGatherCopiesThroughBothPaths) {
  NINFER_REQUIRE_NCCL();
  auto group = make_nccl_group({0});
  Communicator& c = group->rank(0);
  // Several rows go through the staging buffer, one row straight into `out`.
  for (const Layout& l : kLayouts) {
    const std::vector<float> v = values(l.R * l.N, 0);
    DevMat in = dev_mat(gpu(), l.R, l.N, l.S, v);
    DevMat out = dev_mat(gpu(), l.R, l.N, l.N + 3, std::vector<float>(static_cast<size_t>(l.R * l.N), 0.0f));
    c.all_gather(out.t, in.t, gpu());
    bool pad = false;
    EXPECT_EQ(read_rows(gpu(), out, &pad), v) << "[" << l.R << ", " << l.N << "] stride " << l.S;
    EXPECT_TRUE(pad);
  }
}

TEST(NcclSingleRank, BroadcastFromRootZero) {
  NINFER_REQUIRE_NCCL();
  auto group = make_nccl_group({0});
  Communicator& c = group->rank(0);
  for (const Layout& l : kLayouts) {
    const std::vector<float> v = values(l.R * l.N, 0);
    DevMat x = dev_mat(gpu(), l.R, l.N, l.S, v);
    c.broadcast(x.t, 0, gpu());
    bool pad = false;
    EXPECT_EQ(read_rows(gpu(), x, &pad), v);
    EXPECT_TRUE(pad);
  }
}

TEST(NcclSingleRank, RefusesWhatItCannotDo) {
  NINFER_REQUIRE_NCCL();
  auto group = make_nccl_group({0});
  Communicator& c = group->rank(0);
  DevMat x = dev_mat(gpu(), 2, 4, 4, values(8, 0));
  DevMat wide = dev_mat(gpu(), 2, 5, 5, values(10, 0));
  auto kind_of = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::kInternal;  // not thrown: no kind matches below
  };
  EXPECT_EQ(kind_of([&] { c.broadcast(x.t, 1, gpu()); }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of([&] { c.all_gather(wide.t, x.t, gpu()); }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of([&] { c.all_reduce_sum(x.t, cpu_oracle()); }), ErrorKind::kInvalidArgument);
  std::vector<float> host(8, 1.0f);
  EXPECT_EQ(kind_of([&] { c.all_reduce_sum(Tensor::make(host.data(), DType::kF32, {2, 4}), gpu()); }),
            ErrorKind::kInvalidArgument);
  // Nothing was enqueued by the refused calls: the group still works.
  c.all_reduce_sum(x.t, gpu());
  EXPECT_EQ(read_rows(gpu(), x), values(8, 0));
}

// Needs no GPU in a CUDA build (refused before any device is touched); a build without CUDA refuses every list.
TEST(NcclGroup, RefusesBadDeviceLists) {
  auto kind_of = [](const std::vector<int>& devices) {
    try {
      make_nccl_group(devices);
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::kInternal;
  };
  if (!nccl_built()) {
    EXPECT_EQ(kind_of({0}), ErrorKind::kUnsupported);
    return;
  }
  EXPECT_EQ(kind_of({}), ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of({0, 0}), ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of({0, 4096}), ErrorKind::kNotFound);
}

// job(r) for every rank, each on a thread of its own bound to devices[r]; a failure aborts the group (no rank waits
// forever in a collective) and the first one is rethrown once all have stopped.
void run_on_ranks(CommunicatorGroup& group, const std::vector<Backend*>& backends, const std::function<void(int)>& job) {
  const int n = group.size();
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        backends[static_cast<size_t>(r)]->bind_thread();
        job(r);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
        group.abort();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// A second CUDA backend on device 1, or why there is none.
std::unique_ptr<Backend> second_gpu(std::string& why) {
  try {
    return make_cuda_backend({.device = 1});
  } catch (const Error& e) {
    why = std::string("one GPU visible: two NCCL ranks need two GPUs (") + e.what() + ")";
    return nullptr;
  }
}

TEST(NcclMultiGpu, TwoRanksOnTwoDevices) {
  NINFER_REQUIRE_NCCL();
  std::string why;
  std::unique_ptr<Backend> second = second_gpu(why);
  if (!second) GTEST_SKIP() << why;
  auto group = make_nccl_group({0, 1});
  const std::vector<Backend*> backends{&gpu(), second.get()};
  const int64_t widths[2] = {3, 5};  // uneven all_gather
  std::vector<std::string> failures[2];
  run_on_ranks(*group, backends, [&](int r) {
    Backend& b = *backends[r];
    Communicator& c = group->rank(r);
    auto expect = [&](bool ok, const std::string& what) {
      if (!ok) failures[r].push_back(what);
    };
    for (const Layout& l : kLayouts) {
      const std::string where = "[" + std::to_string(l.R) + ", " + std::to_string(l.N) + "] stride " + std::to_string(l.S);
      // all_reduce: the sum of two exact values, the same on both ranks.
      DevMat x = dev_mat(b, l.R, l.N, l.S, values(l.R * l.N, r));
      c.all_reduce_sum(x.t, b);
      std::vector<float> want = values(l.R * l.N, 0);
      const std::vector<float> other = values(l.R * l.N, 1);
      for (size_t i = 0; i < want.size(); ++i) want[i] += other[i];
      bool pad = false;
      expect(read_rows(b, x, &pad) == want && pad, "all_reduce_sum " + where);
      // broadcast from rank 1.
      DevMat y = dev_mat(b, l.R, l.N, l.S, values(l.R * l.N, r));
      c.broadcast(y.t, 1, b);
      expect(read_rows(b, y, &pad) == values(l.R * l.N, 1) && pad, "broadcast " + where);
      // all_gather of widths 3 and 5: rank r's columns at offset 0 or 3.
      const int64_t n = widths[r];
      DevMat in = dev_mat(b, l.R, n, n + (l.S > l.N ? 2 : 0), values(l.R * n, r));
      DevMat out = dev_mat(b, l.R, 8, 8 + (l.S > l.N ? 1 : 0), std::vector<float>(static_cast<size_t>(l.R * 8), 0.0f));
      c.all_gather(out.t, in.t, b);
      std::vector<float> gathered;
      const std::vector<float> a = values(l.R * 3, 0), bb = values(l.R * 5, 1);
      for (int64_t row = 0; row < l.R; ++row) {
        gathered.insert(gathered.end(), a.begin() + row * 3, a.begin() + row * 3 + 3);
        gathered.insert(gathered.end(), bb.begin() + row * 5, bb.begin() + row * 5 + 5);
      }
      expect(read_rows(b, out, &pad) == gathered && pad, "all_gather " + where);
    }
  });
  for (int r = 0; r < 2; ++r)
    for (const std::string& f : failures[r]) ADD_FAILURE() << "rank " << r << ": " << f;
}

// The sharded forward at TP2 with NCCL between GPUs 0 and 1 against TP1 on GPU 0 (the tolerance of
// expect_cuda_tp_equals_tp1: NCCL's all-reduce is not the rank-order sum).
TEST(NcclMultiGpu, ShardedForwardTp2EqualsTp1) {
  NINFER_REQUIRE_NCCL();
  std::string why;
  if (!second_gpu(why)) GTEST_SKIP() << why;
  const Artifact a = Artifact::open(std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer");
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 90; ++i) prompt.push_back((i * 7919 + 13) % 8192);
  expect_cuda_tp_equals_tp1(a, {0, 1}, prompt);  // distinct devices: TpRanks builds an NCCL group
}

}  // namespace
}  // namespace ninfer::testing
