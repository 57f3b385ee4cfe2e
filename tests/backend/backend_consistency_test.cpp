// Backend configs against each other: threaded == single-threaded (bit for bit), each SIMD table == scalar (to rounding).
#include <functional>

#include "engine/backend/cpu/kernels.h"
#include "tests/backend/test_util.h"

namespace ninfer::testing {
namespace {

// Runs a little pipeline of every op on one backend and returns all outputs concatenated.
std::vector<float> run_pipeline(Backend& be) {
  std::mt19937 rng(7);
  std::vector<float> all;
  auto keep = [&](const HostTensor& t) { all.insert(all.end(), t.values.begin(), t.values.end()); };
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    HostTensor x = random_tensor({21, 136}, rng), w = random_tensor({77, 136}, rng, -1, 1, dt), y({21, 77});
    be.linear(y.view(), x.view(), w.view());
    keep(y);
    HostTensor x1 = random_tensor({1, 520}, rng), w1 = random_tensor({300, 520}, rng, -1, 1, dt), y1({1, 300});
    be.linear(y1.view(), x1.view(), w1.view());
    keep(y1);
  }
  HostTensor a = random_tensor({40, 256}, rng), nw = random_tensor({256}, rng, -0.3, 0.3, DType::kBF16), n({40, 256});
  be.rms_norm(n.view(), a.view(), nw.view(), 1e-6f, 1.0f);
  keep(n);
  HostTensor q = random_tensor({40, 8, 32}, rng);
  std::vector<int32_t> pos(40);
  for (int i = 0; i < 40; ++i) pos[static_cast<size_t>(i)] = 3 * i;
  be.rope(q.view(), pos, 16, 1e6);
  keep(q);
  // paged attention, two sequences
  HostTensor kc = random_tensor({12, 8, 2, 32}, rng, -1, 1, DType::kBF16), vc = random_tensor({12, 8, 2, 32}, rng, -1, 1, DType::kBF16);
  std::vector<int32_t> q_start{0, 39, 40}, seq_len{39, 60}, table{5, 3, 9, 1, 0, 0, 0, 0, 2, 4, 6, 8, 10, 11, 7, 0};
  HostTensor out({40, 8, 32});
  be.attention(out.view(), q.view(), KvLayer{kc.view(), vc.view(), {}, {}}, PagedKv{q_start, seq_len, table, 8}, 0.17f);
  keep(out);
  // conv + delta rule
  HostTensor cx = random_tensor({40, 300}, rng), cw = random_tensor({300, 4}, rng), co({40, 300}), cs({2, 3, 300});
  std::vector<int32_t> slots{1, 0};
  be.conv1d(co.view(), cx.view(), cw.view(), cs.view(), SeqBatch{q_start, slots}, true);
  keep(co);
  keep(cs);
  HostTensor dq = random_tensor({40, 2, 32}, rng, -0.2, 0.2), dk = random_tensor({40, 2, 32}, rng, -0.2, 0.2);
  HostTensor dv = random_tensor({40, 4, 16}, rng), dg = random_tensor({40, 4}, rng, -1, 0), db = random_tensor({40, 4}, rng, 0, 1);
  HostTensor st({2, 4, 32, 16}), dout({40, 4, 16});
  be.gated_delta_rule(dout.view(), dq.view(), dk.view(), dv.view(), dg.view(), db.view(), st.view(),
                      SeqBatch{q_start, slots}, DeltaRuleAlgo::kAuto);
  keep(dout);
  keep(st);
  return all;
}

TEST(BackendConsistency, ThreadedEqualsSingleThreadedBitForBit) {
  for (CpuSimd simd : {CpuSimd::kScalar, CpuSimd::kAvx2, CpuSimd::kAuto}) {
    if (simd == CpuSimd::kAvx2 && !cpu_has_avx2_fma()) continue;
    auto one = make_cpu_backend({1, simd});
    const std::vector<float> base = run_pipeline(*one);
    for (int threads : {2, 3, 5}) {
      auto many = make_cpu_backend({threads, simd});
      EXPECT_EQ(run_pipeline(*many), base) << many->name();
    }
  }
}

TEST(BackendConsistency, SimdMatchesScalar) {
  auto scalar = make_cpu_backend({2, CpuSimd::kScalar});
  const std::vector<float> a = run_pipeline(*scalar);
  std::vector<CpuSimd> tables{CpuSimd::kAuto};
  if (cpu_has_avx2_fma()) tables.push_back(CpuSimd::kAvx2);
  for (CpuSimd t : tables) {
    auto simd = make_cpu_backend({2, t});
    const std::vector<float> b = run_pipeline(*simd);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_LT(rel_err(b, a), 1e-5) << simd->name() << " vs " << scalar->name();
  }
  // kAuto names the table it picked: the AVX-512 dense kernels where the CPU has them, else AVX2.
  const std::string auto_name = make_cpu_backend({1, CpuSimd::kAuto})->name();
  if (cpu::avx512_kernels()) {
    EXPECT_NE(auto_name.find("cpu(avx512"), std::string::npos) << auto_name;
  } else if (cpu_has_avx2_fma()) {
    EXPECT_NE(auto_name.find("cpu(avx2"), std::string::npos) << auto_name;
  } else {
    EXPECT_THROW(make_cpu_backend({1, CpuSimd::kAvx2}), Error);
  }
}

}  // namespace
}  // namespace ninfer::testing
