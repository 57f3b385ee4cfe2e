// The sharded forward against TP1 on the same artifact: every logit of a
// chunked prefill and of a greedy decode, for TP 2, 3 and 4 where the heads
// allow (split and replicated KV / GDN key heads), bf16 and nvfp4 weights;
// layouts; splits that cannot be made are refused with the tensor or the heads
// named.
//
// Tolerance: only the summation order differs (each rank sums its share of a
// row-parallel dot, the all-reduce adds the ranks' partial sums), so logits
// agree to max|a − b| / max|b| <= 1e-5; greedy tokens are identical.
#include <gtest/gtest.h>

#include "engine/artifact/mapped_file.h"
#include "engine/core/error.h"
#include "engine/model/weight_shard.h"
#include "engine/pack/packer.h"
#include "tests/model/reference_model.h"
#include "tests/parallel/tp_model.h"

namespace ninfer {
namespace {

using testing::TpModel;

constexpr double kTolerance = 1e-5;
const std::string kTiny =
    std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";

// Logits of a chunked prefill (every row) then `decode` greedy steps (TP1's
// argmax fed to both), side by side.
struct TokensAndLogits {
  std::vector<float> logits;
  std::vector<int32_t> tokens;
};

TokensAndLogits run(TpModel &m, const std::vector<int32_t> &prompt,
                    int64_t chunk, int decode,
                    const std::vector<int32_t> *feed) {
  TokensAndLogits out;
  const int32_t slot = m.acquire();
  constexpr SeqId kId = 3;
  int64_t pos = 0;
  std::span<const float> last;
  for (; pos < static_cast<int64_t>(prompt.size()); pos += chunk) {
    const int64_t n =
        std::min<int64_t>(chunk, static_cast<int64_t>(prompt.size()) - pos);
    SequenceStep s{kId, slot, pos,
                   std::span(prompt).subspan(static_cast<size_t>(pos),
                                             static_cast<size_t>(n)),
                   true};
    last = m.runner->step(std::span(&s, 1));
    out.logits.insert(out.logits.end(), last.begin(), last.end());
    last = last.last(static_cast<size_t>(m.config.vocab_size));
  }
  pos = static_cast<int64_t>(prompt.size());
  for (int t = 0; t < decode; ++t) {
    const int32_t next = feed ? (*feed)[static_cast<size_t>(t)]
                              : testing::ReferenceModel::argmax(last);
    out.tokens.push_back(testing::ReferenceModel::argmax(last));
    SequenceStep d{kId, slot, pos++, std::span(&next, 1), false};
    last = m.runner->step(std::span(&d, 1));
    out.logits.insert(out.logits.end(), last.begin(), last.end());
  }
  m.release(kId, slot);
  return out;
}

void expect_tp_equals_tp1(const Artifact &artifact, int tp,
                          const std::vector<int32_t> &prompt,
                          Nvfp4Activations act = Nvfp4Activations::kNvfp4,
                          double tol = kTolerance) {
  TpModel one(artifact, 1, act), many(artifact, tp, act);
  for (int64_t chunk : {int64_t{1} << 20, int64_t{7}, int64_t{64}}) {
    const TokensAndLogits a = run(one, prompt, chunk, 12, nullptr);
    const TokensAndLogits b = run(many, prompt, chunk, 12, &a.tokens);
    ASSERT_EQ(a.logits.size(), b.logits.size());
    const double err = testing::rel_err(b.logits, a.logits);
    EXPECT_LE(err, tol) << "tp " << tp << ", prefill chunk " << chunk;
    EXPECT_EQ(b.tokens, a.tokens) << "tp " << tp << ", prefill chunk " << chunk;
    std::printf("tp %d chunk %lld: max rel err %.3g over %zu logits\n", tp,
                static_cast<long long>(chunk), err, a.logits.size());
  }
}

std::vector<int32_t> reference_prompt(const std::string &model, size_t i) {
  return testing::read_i32(
      testing::reference_index()["models"][model]["prompts"][i]["tokens"]);
}

struct Case {
  std::string model;
  int tp;
};

class ShardedForward : public ::testing::TestWithParam<Case> {};

TEST_P(ShardedForward, LogitsEqualTp1) {
  const Case c = GetParam();
  testing::ReferenceModel ref(c.model); // packs the fixture
  expect_tp_equals_tp1(*ref.artifact, c.tp, reference_prompt(c.model, 3));
}

INSTANTIATE_TEST_SUITE_P(
    Reference, ShardedForward,
    ::testing::Values(Case{"qwen35_tied", 2}, // heads split
                      Case{"qwen35_tied", 4}, // KV and GDN key heads replicated
                      Case{"qwen35_untied",
                           2}, // untied lm_head, odd local head counts
                      Case{"qwen35_untied_bf16", 2},
                      Case{"qwen3_dense", 2}, // dense, 1 KV head replicated
                      Case{"qwen3_dense", 4}),
    [](const auto &info) {
      return info.param.model + "_tp" + std::to_string(info.param.tp);
    });

TEST(ShardedForwardTiny, NinferTinyTp2EqualsTp1) {
  const Artifact a = Artifact::open(kTiny);
  expect_tp_equals_tp1(a, 2, testing::random_tokens(150, 8192, 7));
}

// A synthetic hybrid model whose heads divide by 3 (the fixtures' do not), with
// an uneven vocabulary split.
TEST(ShardedForwardSynthetic, Tp3EqualsTp1) {
  testing::TempDir dir;
  nlohmann::json config = testing::tiny_qwen35_config();
  config["num_attention_heads"] = 6;
  config["num_key_value_heads"] = 3;
  config["linear_num_key_heads"] = 3;
  config["linear_num_value_heads"] = 6;
  config["vocab_size"] = 100; // 33 / 33 / 34 rows of the lm_head
  config.erase("mtp_num_hidden_layers");
  testing::write_hf_dir(dir.path() / "hf", config,
                        testing::tiny_qwen35_tensors(config, false));
  const std::string out = dir.file("tp3.ninfer");
  pack_artifact({.hf_dir = path_to_utf8(dir.path() / "hf"),
                 .output = out,
                 .show_progress = false});
  const Artifact a = Artifact::open(out);
  expect_tp_equals_tp1(a, 3, testing::random_tokens(90, 100, 3));
}

// NVFP4 projections split on whole 16-element blocks with their scales. W4A16
// (f32 activations) equals TP1 up to the summation order; W4A4's dynamic
// activation scale is per row of a linear's input, which a row-parallel rank
// sees only its share of, so it is compared loosely (docs/parallel.md).
TEST(ShardedForwardNvfp4, Tp2EqualsTp1AndABlockBreakingSplitIsRefused) {
  testing::TempDir dir;
  const std::string out = dir.file("dense_nvfp4.ninfer");
  pack_artifact({.hf_dir = std::string(NINFER_TEST_DATA) +
                           "/reference/models/qwen3_dense",
                 .output = out,
                 .quant = {.nvfp4 = true},
                 .show_progress = false});
  const Artifact a = Artifact::open(out);
  expect_tp_equals_tp1(a, 2, reference_prompt("qwen3_dense", 3),
                       Nvfp4Activations::kFloat);
  { // W4A4 at TP2 strays from W4A16 no more than W4A4 at TP1 does (a rank's
    // row-parallel input is its share)
    const auto prompt = reference_prompt("qwen3_dense", 2);
    TpModel ref(a, 1, Nvfp4Activations::kFloat), one(a, 1), two(a, 2);
    const TokensAndLogits w = run(ref, prompt, 16, 4, nullptr);
    const TokensAndLogits x = run(one, prompt, 16, 4, &w.tokens);
    const TokensAndLogits y = run(two, prompt, 16, 4, &w.tokens);
    const double e1 = testing::rel_err(x.logits, w.logits),
                 e2 = testing::rel_err(y.logits, w.logits);
    std::printf("W4A4 vs W4A16: tp1 %.3g, tp2 %.3g; tp2 vs tp1 %.3g\n", e1, e2,
                testing::rel_err(y.logits, x.logits));
    EXPECT_LE(e2, 2 * e1) << "W4A4 at TP2";
  }
  // qwen3_dense's intermediate 96 over 4 ranks: 24 columns of down_proj each,
  // not whole blocks.
  try {
    TpModel four(a, 4);
    FAIL() << "a block-breaking split was accepted";
  } catch (const Error &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("model.layers.0.mlp.down_proj.weight"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("16-element"), std::string::npos) << what;
  }
}

// An nvfp4 lm_head (ninfer-pack --quant-lm-head nvfp4) splits by vocabulary
// rows as a float one does.
TEST(ShardedForwardNvfp4, AnNvfp4LmHeadSplitsByVocabularyRows) {
  testing::TempDir dir;
  const std::string out = dir.file("dense_nvfp4_head.ninfer");
  pack_artifact({.hf_dir = std::string(NINFER_TEST_DATA) +
                           "/reference/models/qwen3_dense",
                 .output = out,
                 .quant = {.nvfp4 = true, .lm_head = true},
                 .show_progress = false});
  const Artifact a = Artifact::open(out);
  ASSERT_EQ(a.find("lm_head.weight")->dtype, DType::kNVFP4);
  expect_tp_equals_tp1(a, 2, reference_prompt("qwen3_dense", 3),
                       Nvfp4Activations::kFloat);
}

TEST(TpLayout, HeadsSplitOrReplicatedAndRefusedOtherwise) {
  testing::ReferenceModel ref(
      "qwen35_untied"); // 6 heads, 2 KV, GDN 2 key / 6 value heads, vocab 448
  const ModelConfig &c = ref.config;
  const TpLayout l = tp_layout(c, 1, 2);
  EXPECT_EQ(l.q_head0, 3);
  EXPECT_EQ(l.q_heads, 3);
  EXPECT_EQ(l.kv_head0, 1);
  EXPECT_EQ(l.kv_heads, 1);
  EXPECT_FALSE(l.kv_replicated);
  EXPECT_EQ(l.gdn_v_head0, 3);
  EXPECT_EQ(l.gdn_k_head0, 1);
  EXPECT_EQ(l.vocab0, 224);
  const ModelConfig rc = tp_rank_config(c, l);
  EXPECT_EQ(rc.num_heads, 3);
  EXPECT_EQ(rc.linear_conv_dim(),
            2 * 1 * c.linear_key_head_dim + 3 * c.linear_value_head_dim);
  EXPECT_EQ(rc.vocab_size, c.vocab_size);
  // 6 query heads over 4 ranks, 2 KV heads over 3 ranks: refused, naming the
  // heads.
  try {
    tp_layout(c, 0, 4);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "the 6 attention query heads do not divide over 4 ranks"),
              std::string::npos)
        << e.what();
  }
  try {
    tp_layout(c, 0, 3);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(
        std::string(e.what()).find("KV heads neither divide over 3 ranks"),
        std::string::npos)
        << e.what();
  }
  testing::ReferenceModel tied(
      "qwen35_tied"); // 4 heads, 2 KV: at TP4 rank 3 reads KV head 1
  const TpLayout r3 = tp_layout(tied.config, 3, 4);
  EXPECT_TRUE(r3.kv_replicated);
  EXPECT_EQ(r3.kv_head0, 1);
  EXPECT_TRUE(r3.gdn_k_replicated);
}

} // namespace
} // namespace ninfer
