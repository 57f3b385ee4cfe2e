// CPU backend ops against the tensors transformers produced for one layer (tests/data/reference/ops, see
// tools/reference/README.md): the op-level half of the golden check.
#include <numeric>

#include "tests/backend/reference_data.h"
#include "tests/backend/test_util.h"

namespace ninfer::testing {
namespace {

// A reference tensor as a mutable f32 host tensor.
HostTensor load(const nlohmann::json& op, const std::string& name) {
  const RefTensor r = read_reference(op.at("tensors").at(name));
  HostTensor t(r.shape);
  t.values = r.f32;
  return t;
}

const nlohmann::json& model_config(const std::string& model) {
  return reference_index().at("models").at(model).at("config");
}

class TorchOps : public ::testing::TestWithParam<BackendConfig> {
 protected:
  void SetUp() override { be = make_cpu_backend(GetParam().options); }
  std::unique_ptr<Backend> be;
};

void expect_close(const HostTensor& got, const HostTensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.values.size(), want.values.size()) << what;
  const double e = rel_err(got.values, want.values);
  EXPECT_LT(e, tol) << what << ": max rel err " << e;
}

void check_norm_and_mlp(Backend& be, const nlohmann::json& op, float w_offset) {
  HostTensor x = load(op, "x"), w = load(op, "input_norm_weight"), want = load(op, "input_norm_out");
  HostTensor y(x.shape);
  be.rms_norm(y.view(), x.view(), w.view(), 1e-6f, w_offset);
  expect_close(y, want, 2e-6, "input rms_norm");
  HostTensor mixer = load(op, "mixer_out"), r1({x.shape}), r1_want = load(op, "residual1");
  be.add(r1.view(), x.view(), mixer.view());
  expect_close(r1, r1_want, 1e-7, "residual add");
  HostTensor pw = load(op, "post_norm_weight"), pn(x.shape), pn_want = load(op, "post_norm_out");
  be.rms_norm(pn.view(), r1_want.view(), pw.view(), 1e-6f, w_offset);
  expect_close(pn, pn_want, 2e-6, "post rms_norm");
  HostTensor gate = load(op, "mlp_gate"), up = load(op, "mlp_up"), act(gate.shape), act_want = load(op, "mlp_act");
  be.silu_mul(act.view(), gate.view(), up.view());
  expect_close(act, act_want, 2e-6, "swiglu");
}

TEST_P(TorchOps, GatedDeltaNetLayer) {
  const nlohmann::json& op = reference_ops("qwen35_untied", 0);
  const nlohmann::json& cfg = model_config("qwen35_untied");
  const int64_t nk = cfg.at("linear_num_key_heads"), nv = cfg.at("linear_num_value_heads");
  const int64_t dk = cfg.at("linear_key_head_dim"), dv = cfg.at("linear_value_head_dim");
  const int64_t conv_dim = 2 * nk * dk + nv * dv;
  check_norm_and_mlp(*be, op, 1.0f);

  HostTensor xn = load(op, "input_norm_out"), wqkv = load(op, "in_proj_qkv_weight"), qkv_want = load(op, "qkv");
  const int64_t T = xn.shape[0];
  HostTensor qkv({T, conv_dim});
  be->linear(qkv.view(), xn.view(), wqkv.view());
  expect_close(qkv, qkv_want, 2e-6, "in_proj_qkv");

  HostTensor cw = load(op, "conv_weight"), conv_want = load(op, "conv_out"), conv({T, conv_dim});
  const int64_t K = cw.shape[1];
  HostTensor cstate({1, K - 1, conv_dim});
  const std::vector<int32_t> q_start{0, static_cast<int32_t>(T)}, slot{0};
  be->conv1d(conv.view(), qkv_want.view(), cw.view(), cstate.view(), SeqBatch{q_start, slot}, true);
  expect_close(conv, conv_want, 2e-6, "conv1d + silu");

  HostTensor a = load(op, "a"), b = load(op, "b"), A_log = load(op, "A_log"), dt_bias = load(op, "dt_bias");
  HostTensor g(a.shape), beta(b.shape), g_want = load(op, "g"), beta_want = load(op, "beta");
  be->gdn_gating(g.view(), beta.view(), a.view(), b.view(), A_log.view(), dt_bias.view());
  expect_close(g, g_want, 2e-6, "gdn gating g");
  expect_close(beta, beta_want, 2e-6, "gdn gating beta");

  // q, k, v are strided views into the conv output [T, q | k | v]
  float* base = conv_want.values.data();
  Tensor qv = Tensor::strided(base, DType::kF32, {T, nk, dk}, {conv_dim, dk, 1});
  Tensor kv = Tensor::strided(base + nk * dk, DType::kF32, {T, nk, dk}, {conv_dim, dk, 1});
  Tensor vv = Tensor::strided(base + 2 * nk * dk, DType::kF32, {T, nv, dv}, {conv_dim, dv, 1});
  HostTensor ql2({T, nk, dk}), kl2({T, nk, dk});
  be->l2_norm(ql2.view(), qv, 1e-6f, 1.0f);
  be->l2_norm(kl2.view(), kv, 1e-6f, 1.0f);
  expect_close(ql2, load(op, "q_l2"), 2e-6, "l2norm q");
  expect_close(kl2, load(op, "k_l2"), 2e-6, "l2norm k");
  HostTensor qs({T, nk, dk});
  be->l2_norm(qs.view(), qv, 1e-6f, 1.0f / std::sqrt(float(dk)));

  for (DeltaRuleAlgo algo : {DeltaRuleAlgo::kChunked, DeltaRuleAlgo::kRecurrent}) {
    HostTensor out({T, nv, dv}), state({1, nv, dk, dv});
    be->gated_delta_rule(out.view(), qs.view(), kl2.view(), vv, g_want.view(), beta_want.view(), state.view(),
                         SeqBatch{q_start, slot}, algo);
    // chunked vs transformers' torch_chunk_gated_delta_rule, recurrent vs its torch_recurrent_gated_delta_rule
    const std::string form = algo == DeltaRuleAlgo::kChunked ? "chunked" : "recurrent";
    expect_close(out, load(op, "delta_out_" + form), 2e-5, "delta rule out, " + form);
    expect_close(state, load(op, "delta_state_" + form), 2e-5, "delta rule state, " + form);
    // continuation segment from the final state (transformers' initial_state)
    HostTensor cq = load(op, "cont_q"), ck = load(op, "cont_k"), cv = load(op, "cont_v");
    HostTensor cg = load(op, "cont_g"), cb = load(op, "cont_beta");
    const int64_t T2 = cq.shape[0];
    HostTensor cqn(cq.shape), ckn(ck.shape), cout({T2, nv, dv});
    be->l2_norm(cqn.view(), cq.view(), 1e-6f, 1.0f / std::sqrt(float(dk)));
    be->l2_norm(ckn.view(), ck.view(), 1e-6f, 1.0f);
    const std::vector<int32_t> q2{0, static_cast<int32_t>(T2)};
    be->gated_delta_rule(cout.view(), cqn.view(), ckn.view(), cv.view(), cg.view(), cb.view(), state.view(),
                         SeqBatch{q2, slot}, algo);
    expect_close(cout, load(op, "cont_out"), 2e-5, "delta rule continuation out");
    expect_close(state, load(op, "cont_state"), 2e-5, "delta rule continuation state");
  }

  HostTensor core = load(op, "delta_out_chunked"), z = load(op, "z"), nw = load(op, "gated_norm_weight");
  HostTensor gn({T, nv, dv});
  Tensor zv = z.view().reshape({T, nv, dv});
  be->gated_rms_norm(gn.view(), core.view(), zv, nw.view(), 1e-6f);
  HostTensor gn_want = load(op, "gated_norm_out");
  ASSERT_EQ(gn.values.size(), gn_want.values.size());
  EXPECT_LT(rel_err(gn.values, gn_want.values), 2e-6) << "gated rms_norm";
  HostTensor wo = load(op, "out_proj_weight"), mo({T, wo.shape[0]});
  be->linear(mo.view(), gn_want.view(), wo.view());
  expect_close(mo, load(op, "mixer_out"), 2e-6, "out_proj");
}

void check_attention_layer(Backend& be, const std::string& model, int layer, bool gated, float w_offset) {
  const nlohmann::json& op = reference_ops(model, layer);
  const nlohmann::json& cfg = model_config(model);
  const int64_t nh = cfg.at("num_attention_heads"), nkv = cfg.at("num_key_value_heads"), hd = cfg.at("head_dim");
  const auto& rp = cfg.at("rope_parameters");
  const double theta = rp.at("rope_theta");
  const double factor = rp.value("partial_rotary_factor", 1.0);
  const int64_t rotary = static_cast<int64_t>(double(hd) * factor);
  check_norm_and_mlp(be, op, w_offset);

  HostTensor q_pre = load(op, "q_pre_norm"), k_pre = load(op, "k_pre_norm");
  const int64_t T = q_pre.shape[0];
  Tensor q_in = q_pre.view();
  HostTensor qg;
  if (gated) {  // normalise straight out of the per-head [query | gate] q_proj rows
    qg = load(op, "q_proj_out");
    q_in = Tensor::strided(qg.values.data(), DType::kF32, {T, nh, hd}, {nh * 2 * hd, 2 * hd, 1});
  }
  HostTensor qn({T, nh, hd}), kn({T, nkv, hd});
  be.rms_norm(qn.view(), q_in, load(op, "q_norm_weight").view(), 1e-6f, w_offset);
  HostTensor kw = load(op, "k_norm_weight");
  be.rms_norm(kn.view(), k_pre.view(), kw.view(), 1e-6f, w_offset);
  expect_close(qn, load(op, "q_normed"), 2e-6, "q_norm");
  expect_close(kn, load(op, "k_normed"), 2e-6, "k_norm");

  std::vector<int32_t> pos(static_cast<size_t>(T));
  std::iota(pos.begin(), pos.end(), 0);
  HostTensor qr = load(op, "q_normed"), kr = load(op, "k_normed");
  be.rope(qr.view(), pos, rotary, theta);
  be.rope(kr.view(), pos, rotary, theta);
  expect_close(qr, load(op, "q_rope"), 2e-6, "rope q");
  expect_close(kr, load(op, "k_rope"), 2e-6, "rope k");

  // paged cache with scattered blocks of 16; prefill written in two pieces
  const int64_t bs = 16, nblocks = (T + bs - 1) / bs + 2;
  std::vector<int32_t> table(static_cast<size_t>((T + bs - 1) / bs));
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>((i * 5 + 3) % static_cast<size_t>(nblocks));
  HostTensor kc({nblocks, bs, nkv, hd}), vc({nblocks, bs, nkv, hd});
  HostTensor kw_ = load(op, "k_rope"), vw = load(op, "v");
  std::vector<int32_t> slots(static_cast<size_t>(T));
  for (int64_t p = 0; p < T; ++p)
    slots[static_cast<size_t>(p)] = table[static_cast<size_t>(p / bs)] * static_cast<int32_t>(bs) + static_cast<int32_t>(p % bs);
  be.kv_write(KvLayer{kc.view(), vc.view(), {}, {}}, kw_.view(), vw.view(), slots);
  HostTensor qrw = load(op, "q_rope"), out({T, nh, hd});
  const std::vector<int32_t> q_start{0, static_cast<int32_t>(T)}, seq_len{static_cast<int32_t>(T)};
  be.attention(out.view(), qrw.view(), KvLayer{kc.view(), vc.view(), {}, {}},
               PagedKv{q_start, seq_len, table, static_cast<int32_t>(table.size())}, 1.0f / std::sqrt(float(hd)));
  HostTensor attn_want = load(op, "attn_out");
  EXPECT_LT(rel_err(out.values, attn_want.values), 2e-6) << "attention";
  if (gated) {
    HostTensor gate = load(op, "gate"), gated_out(attn_want.shape);
    be.sigmoid_mul(gated_out.view(), attn_want.view(), gate.view());
    expect_close(gated_out, load(op, "attn_gated"), 2e-6, "output gate");
  }
}

TEST_P(TorchOps, GatedAttentionLayer) { check_attention_layer(*be, "qwen35_untied", 1, true, 1.0f); }
TEST_P(TorchOps, Qwen3AttentionLayer) { check_attention_layer(*be, "qwen3_dense", 0, false, 0.0f); }

INSTANTIATE_TEST_SUITE_P(Cpu, TorchOps, ::testing::ValuesIn(backend_configs()),
                         [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace ninfer::testing
