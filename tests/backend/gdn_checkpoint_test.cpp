// Per-row state checkpoints of the GDN ops (speculative-decoding rollback) against running the ops token by token.
#include <vector>

#include "tests/backend/test_util.h"

namespace ninfer::testing {
namespace {

class GdnCheckpoint : public ::testing::TestWithParam<BackendConfig> {
 protected:
  void SetUp() override { be = make_cpu_backend(GetParam().options); }
  std::unique_ptr<Backend> be;
  std::mt19937 rng{7};
};

// The slice of `t` (state [slots, ...] contiguous) at slot s, as a vector.
std::vector<float> slot_values(const HostTensor& t, int64_t s) {
  const size_t per = t.values.size() / static_cast<size_t>(t.shape[0]);
  return {t.values.begin() + static_cast<std::ptrdiff_t>(per * s), t.values.begin() + static_cast<std::ptrdiff_t>(per * (s + 1))};
}

// Two sequences (state slots 1 and 0) with 5 and 19 rows (19 >= the chunked threshold: checkpoints force the
// recurrent form); every row but a few gets a checkpoint. Each checkpoint must equal, bit for bit, the state the
// same op reaches when it is fed one row at a time, and the outputs must equal the token-by-token outputs.
TEST_P(GdnCheckpoint, CheckpointRowsEqualTokenByTokenState) {
  const int64_t C = 40, K = 4, nk = 2, nv = 4, dk = 8, dv = 6;
  const std::vector<int32_t> q_start{0, 5, 24}, slots{1, 0};
  const int64_t T = q_start.back(), kSlots = 2 + T;
  std::vector<int32_t> ck(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) ck[static_cast<size_t>(t)] = t % 7 == 3 ? -1 : static_cast<int32_t>(2 + t);
  HostTensor x = random_tensor({T, C}, rng, -2, 2), w = random_tensor({C, K}, rng, -1, 1, DType::kBF16);
  HostTensor q = random_tensor({T, nk, dk}, rng, -0.3f, 0.3f), k = random_tensor({T, nk, dk}, rng, -0.3f, 0.3f);
  HostTensor v = random_tensor({T, nv, dv}, rng), g = random_tensor({T, nv}, rng, -1.0f, 0.0f);
  HostTensor beta = random_tensor({T, nv}, rng, 0, 1);
  HostTensor conv_state = random_tensor({kSlots, K - 1, C}, rng), rec_state = random_tensor({kSlots, nv, dk, dv}, rng);
  HostTensor conv_seq = conv_state, rec_seq = rec_state;  // the token-by-token run starts from the same states
  const HostTensor conv_init = conv_state, rec_init = rec_state;

  HostTensor conv_out({T, C}), delta_out({T, nv, dv});
  const SeqBatch batch{q_start, slots, ck};
  be->conv1d(conv_out.view(), x.view(), w.view(), conv_state.view(), batch, true);
  be->gated_delta_rule(delta_out.view(), q.view(), k.view(), v.view(), g.view(), beta.view(), rec_state.view(), batch);

  HostTensor conv_one({T, C}), delta_one({T, nv, dv});
  for (size_t s = 0; s + 1 < q_start.size(); ++s) {
    const std::vector<int32_t> one{0, 1}, slot{slots[s]};
    for (int64_t t = q_start[s]; t < q_start[s + 1]; ++t) {
      const SeqBatch b{one, slot};
      auto row = [&](HostTensor& h) { return h.view().slice0(t, t + 1); };
      be->conv1d(row(conv_one), row(x), w.view(), conv_seq.view(), b, true);
      be->gated_delta_rule(row(delta_one), row(q), row(k), row(v), row(g), row(beta), rec_seq.view(), b,
                           DeltaRuleAlgo::kRecurrent);
      if (ck[static_cast<size_t>(t)] < 0) continue;
      EXPECT_EQ(slot_values(conv_state, ck[static_cast<size_t>(t)]), slot_values(conv_seq, slots[s])) << "conv row " << t;
      EXPECT_EQ(slot_values(rec_state, ck[static_cast<size_t>(t)]), slot_values(rec_seq, slots[s])) << "delta row " << t;
    }
    EXPECT_EQ(slot_values(conv_state, slots[s]), slot_values(conv_seq, slots[s])) << "final conv state, seq " << s;
    EXPECT_EQ(slot_values(rec_state, slots[s]), slot_values(rec_seq, slots[s])) << "final delta state, seq " << s;
  }
  EXPECT_EQ(conv_out.values, conv_one.values);
  EXPECT_EQ(delta_out.values, delta_one.values);
  // A row without a checkpoint (row 3) leaves the slot it would have used untouched.
  EXPECT_EQ(slot_values(conv_state, 2 + 3), slot_values(conv_init, 2 + 3));
  EXPECT_EQ(slot_values(rec_state, 2 + 3), slot_values(rec_init, 2 + 3));
}

TEST_P(GdnCheckpoint, RejectsBadCheckpointSlots) {
  const int64_t C = 8, K = 4;
  HostTensor x = random_tensor({3, C}, rng), w = random_tensor({C, K}, rng), out({3, C}), st({6, K - 1, C});
  const std::vector<int32_t> q_start{0, 3}, slot{0};
  const std::vector<int32_t> is_state{1, 0, 2}, too_big{1, 2, 6}, repeated{1, 1, 2}, short_span{1, 2};
  for (const auto* ck : {&is_state, &too_big, &repeated, &short_span})
    EXPECT_THROW(be->conv1d(out.view(), x.view(), w.view(), st.view(), SeqBatch{q_start, slot, *ck}, true), Error);
  const std::vector<int32_t> ok{-1, 3, 4};
  EXPECT_NO_THROW(be->conv1d(out.view(), x.view(), w.view(), st.view(), SeqBatch{q_start, slot, ok}, true));
}

INSTANTIATE_TEST_SUITE_P(Cpu, GdnCheckpoint, ::testing::ValuesIn(backend_configs()),
                         [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace ninfer::testing
