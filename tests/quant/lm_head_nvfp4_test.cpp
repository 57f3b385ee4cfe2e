// ninfer-pack --quant-lm-head nvfp4: what the packer stores (quantize_nvfp4 of the float lm_head, or for a tied model
// of its embedding, which stays as it is) and what the engine scores with it: every logit equals the final-norm hidden
// row times the dequantized head, summed here in double (W4A16), on the untied and the tied reference models.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/artifact/artifact.h"
#include "engine/backend/backend.h"
#include "engine/core/error.h"
#include "engine/core/half.h"
#include "engine/hf/safetensors_writer.h"
#include "engine/model/model.h"
#include "engine/model/model_artifact.h"
#include "engine/model/model_weights.h"
#include "engine/pack/packer.h"
#include "engine/quant/nvfp4.h"
#include "engine/runtime/model_runner.h"
#include "tests/support/pack_error.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

const std::string kModels = std::string(NINFER_TEST_DATA) + "/reference/models/";

std::vector<float> as_f32(const Artifact& a, const TensorInfo& t) {
  std::vector<float> out(static_cast<size_t>(t.shape[0] * t.shape[1]));
  const auto bytes = a.data(t);
  if (t.dtype == DType::kF32) {
    std::memcpy(out.data(), bytes.data(), out.size() * 4);
  } else {
    std::vector<uint16_t> h(out.size());
    std::memcpy(h.data(), bytes.data(), h.size() * 2);
    if (t.dtype == DType::kBF16) bf16_to_f32(h.data(), out.data(), out.size());
    else f16_to_f32(h.data(), out.data(), out.size());
  }
  return out;
}

struct Scored {
  std::vector<float> logits;  // [T, V]
  std::vector<float> hidden;  // [T, H]: the final-norm rows the lm_head reads
};

// Every position's logits and final hidden rows for `tokens` through the CPU engine (W4A16: f32 activations).
Scored score(const std::string& path, const std::vector<int32_t>& tokens) {
  Artifact a = Artifact::open(path);
  ModelConfig config = load_model_config(a);
  auto backend = make_cpu_backend({.threads = 2, .nvfp4_activations = Nvfp4Activations::kFloat});
  Model model(config, ModelWeights::bind(a, config), *backend);
  KvCache kv(*backend, config, KvCacheConfig{.block_size = 16, .num_blocks = 8, .dtype = DType::kF32});
  LinearStateCache state(*backend, config, 1);
  ModelRunner runner(model, kv, state);
  const FeatureSpec spec{.final_hidden = true};
  SequenceStep step{1, state.acquire(), 0, tokens, true};
  const auto logits = runner.step(std::span(&step, 1), &spec);
  return {{logits.begin(), logits.end()}, {runner.features().begin(), runner.features().end()}};
}

std::vector<int32_t> prompt(int64_t vocab) {
  std::vector<int32_t> t;
  for (int i = 0; i < 24; ++i) t.push_back(static_cast<int32_t>((i * 7919 + 13) % vocab));
  return t;
}

// Packs `model` with nvfp4 projections and the nvfp4 head, checks the stored head against quantize_nvfp4 of the
// source head (`lm_head.weight`, or the embedding when tied) and the engine's logits against h · dequant(head).
void check_model(const std::string& model, bool tied) {
  testing::TempDir dir;
  const std::string plain = dir.file("plain.ninfer"), head = dir.file("head.ninfer");
  pack_artifact({.hf_dir = kModels + model, .output = plain, .quant = {.nvfp4 = true}, .show_progress = false});
  const PackReport r = pack_artifact(
      {.hf_dir = kModels + model, .output = head, .quant = {.nvfp4 = true, .lm_head = true}, .show_progress = false});
  EXPECT_TRUE(r.quant.lm_head);
  const Artifact p = Artifact::open(plain), a = Artifact::open(head, {.verify_checksums = true});
  const ModelConfig c = load_model_config(a);
  ASSERT_EQ(c.tie_word_embeddings, tied);
  const int64_t V = c.vocab_size, H = c.hidden_size;

  // Stored: lm_head.weight nvfp4 [V, H] = quantize_nvfp4(source head); the embedding untouched.
  const TensorInfo* q = a.find("lm_head.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dtype, DType::kNVFP4);
  EXPECT_EQ(q->shape, (std::vector<int64_t>{V, H}));
  const TensorInfo* src = p.find(tied ? "model.embed_tokens.weight" : "lm_head.weight");
  ASSERT_NE(src, nullptr);
  const std::vector<float> w = as_f32(p, *src);
  std::vector<std::byte> want(nvfp4_layout(std::array<int64_t, 2>{V, H})->total_bytes);
  quantize_nvfp4(w.data(), V, H, want);
  const auto got = a.data(*q);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0);
  const TensorInfo *e0 = p.find("model.embed_tokens.weight"), *e1 = a.find("model.embed_tokens.weight");
  ASSERT_TRUE(e0 && e1);
  EXPECT_EQ(e1->dtype, e0->dtype);
  EXPECT_EQ(std::memcmp(a.data(*e1).data(), p.data(*e0).data(), e0->bytes), 0);
  EXPECT_EQ(a.metadata()["quantization"]["ninfer_pack"]["lm_head"], "nvfp4");

  // Scored: logits[t, v] = Σ_k h[t, k] · dequant(head)[v, k], to the f32 summation's rounding.
  std::vector<float> dq(static_cast<size_t>(V * H));
  dequantize_nvfp4(got, V, H, dq.data());
  const std::vector<int32_t> tokens = prompt(V);
  const Scored s = score(head, tokens);
  const auto T = static_cast<int64_t>(tokens.size());
  ASSERT_EQ(s.logits.size(), static_cast<size_t>(T * V));
  ASSERT_EQ(s.hidden.size(), static_cast<size_t>(T * H));
  double worst = 0;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t v = 0; v < V; ++v) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < H; ++k) {
        const double x = double(s.hidden[t * H + k]) * double(dq[v * H + k]);
        ref += x, mag += std::fabs(x);
      }
      const double err = std::fabs(double(s.logits[t * V + v]) - ref);
      worst = std::max(worst, err / (mag + 1e-30));
      ASSERT_LE(err, 4 * H * 1.2e-7 * mag + 1e-6) << "t " << t << " v " << v << " ref " << ref;
    }
  }
  // The head is really the nvfp4 one: the bf16-head model's logits (same projections) differ from it.
  const Scored base = score(plain, tokens);
  double diff = 0;
  for (size_t i = 0; i < base.logits.size(); ++i) diff = std::max(diff, double(std::fabs(base.logits[i] - s.logits[i])));
  EXPECT_GT(diff, 0.0);
  std::printf("%s: worst |logit - h·dq(W)| / Σ|h·w| %.3g; max |nvfp4 head - float head| %.3g\n", model.c_str(), worst,
              diff);
}

TEST(LmHeadNvfp4, UntiedHeadIsQuantizedAndScoresWithItsDequantization) { check_model("qwen35_untied", false); }

TEST(LmHeadNvfp4, TiedModelGetsAStoredNvfp4HeadAndKeepsItsEmbedding) { check_model("qwen35_tied", true); }

TEST(LmHeadNvfp4, ATiedModelsStoredHeadIsCheckedAsAnUntiedOnesIs) {
  // A tied model's stored lm_head.weight is used over the embedding, so its shape is checked like an untied one's.
  testing::TempDir dir;
  const std::string bad = path_to_utf8(dir.path() / "head.safetensors");
  write_safetensors(bad, {{"lm_head.weight", {"BF16", {3, 5}}}},
                    [](const std::string&, std::string& out) { out.assign(3 * 5 * 2, '\0'); });
  const std::string err = testing::pack_error(
      {.hf_dir = kModels + "qwen35_tied", .add_safetensors = {bad}, .output = dir.file("x.ninfer"), .show_progress = false});
  EXPECT_NE(err.find("lm_head.weight"), std::string::npos) << err;
  EXPECT_NE(err.find("shape"), std::string::npos) << err;
}

}  // namespace
}  // namespace ninfer
