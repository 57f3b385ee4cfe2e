// End to end on the GPU: the transformers reference models and ninfer-tiny run
// on the CUDA backend give the CPU backend's logits (chunked prefill and
// decode, f32 and int8 KV) and, through the Engine, the CPU's greedy tokens for
// a batch of 4; MTP and DFlash2 speculative decoding on CUDA are lossless.
// Skipped without a GPU, like the op suite.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>

#include "engine/artifact/artifact.h"
#include "engine/constrain/think_stop_mask.h"
#include "engine/model/model_artifact.h"
#include "engine/pack/packer.h"
#include "engine/runtime/engine.h"
#include "engine/speculative/drafter_registry.h"
#include "tests/cuda/cuda_test_support.h"
#include "tests/model/reference_model.h"
#include "tests/support/greedy_engine_run.h"

namespace ninfer::testing {
namespace {

const std::string kTiny =
    std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";

// Tolerances. Both backends compute in f32 from the same weights; they differ
// in summation order (parallel reductions, split-K) and in libm (GPU expf/sinf
// vs glibc), which compounds over the layers. Logits are compared as max|a − b|
// / max|b| per step.
constexpr double kLogitRelTol = 2e-3;
// A greedy CUDA token may differ from the CPU's only where the CPU's top two
// logits are within this (a near-tie).
constexpr float kNearTie = 1e-3f;

// The NVFP4 models, packed once per process (W4A4 on both backends, their
// default): the ModelOpt checkpoint (static input scales) and the bf16
// checkpoint quantized by ninfer-pack (dynamic input scales;
// "bf16_quant_head_nvfp4" with the lm_head too: ninfer-pack --quant-lm-head
// nvfp4). A 45-row prefill chunk runs the W4A4 tensor-core GEMM, 7 the tile
// GEMM, decode the dp4a GEMV.
std::string nvfp4_artifact(const std::string &name) {
  static TempDir dir;
  const std::string out = dir.file(name + ".ninfer");
  if (!std::filesystem::exists(out)) {
    const std::string ck =
        std::string(NINFER_TEST_DATA) + "/quant/checkpoints/";
    if (name == "modelopt_nvfp4")
      pack_artifact(
          {.hf_dir = ck + "modelopt", .output = out, .show_progress = false});
    else
      pack_artifact(
          {.hf_dir = ck + "bf16",
           .output = out,
           .quant = {.nvfp4 = true, .lm_head = name == "bf16_quant_head_nvfp4"},
           .show_progress = false});
  }
  return out;
}

std::unique_ptr<ReferenceModel> load(const std::string &name, DType kv,
                                     BackendKind kind) {
  if (name == "ninfer-tiny")
    return std::make_unique<ReferenceModel>(ReferenceModel::Packed{kTiny}, kv,
                                            2, kind);
  if (name.ends_with("_nvfp4"))
    return std::make_unique<ReferenceModel>(
        ReferenceModel::Packed{nvfp4_artifact(name)}, kv, 2, kind);
  return std::make_unique<ReferenceModel>(name, kv, 2, kind);
}

std::vector<int32_t> prompt_of(const ModelConfig &c, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(
      0, static_cast<int32_t>(std::min<int64_t>(c.vocab_size, 4000)) - 1);
  std::vector<int32_t> p(n);
  for (auto &t : p)
    t = id(rng);
  return p;
}

float top2_gap(std::span<const float> row) {
  float a = -INFINITY, b = -INFINITY;
  for (float v : row) {
    if (v > a) {
      b = a;
      a = v;
    } else if (v > b) {
      b = v;
    }
  }
  return a - b;
}

struct Case {
  std::string model;
  DType kv;
  int64_t chunk; // prefill chunk
};
void PrintTo(const Case &c, std::ostream *os) {
  *os << c.model << "_" << dtype_name(c.kv) << "_chunk" << c.chunk;
}

class CudaE2E : public ::testing::TestWithParam<Case> {};

// Prefill a 45-token prompt in chunks (all logits), then 64 greedy decode steps
// teacher-forced with the CPU's tokens, comparing every step's logits and
// argmax.
TEST_P(CudaE2E, LogitsAndGreedyMatchCpu) {
  NINFER_REQUIRE_CUDA();
  const Case &p = GetParam();
  auto cpu = load(p.model, p.kv, BackendKind::kCpu);
  auto dev = load(p.model, p.kv, BackendKind::kCuda);
  const int64_t V = cpu->config.vocab_size;
  const std::vector<int32_t> prompt = prompt_of(cpu->config, 45, 7);
  const int32_t cs = cpu->state->acquire(), ds = dev->state->acquire();
  auto run = [](ReferenceModel &m, SequenceStep s) {
    auto l = m.runner->step(std::span(&s, 1));
    return std::vector<float>(l.begin(), l.end());
  };
  std::vector<float> want, got;
  for (int64_t start = 0; start < static_cast<int64_t>(prompt.size());
       start += p.chunk) {
    const int64_t n =
        std::min<int64_t>(p.chunk, static_cast<int64_t>(prompt.size()) - start);
    auto toks = std::span(prompt).subspan(static_cast<size_t>(start),
                                          static_cast<size_t>(n));
    want = run(*cpu, {1, cs, start, toks, true});
    got = run(*dev, {1, ds, start, toks, true});
    ASSERT_EQ(got.size(), want.size());
    for (int64_t r = 0; r < n; ++r) {
      auto w = std::span(want).subspan(static_cast<size_t>(r * V),
                                       static_cast<size_t>(V));
      auto g = std::span(got).subspan(static_cast<size_t>(r * V),
                                      static_cast<size_t>(V));
      EXPECT_LE(rel_err(g, w), kLogitRelTol) << "prefill row " << start + r;
    }
  }
  int64_t pos = static_cast<int64_t>(prompt.size());
  int flips = 0;
  for (int step = 0; step < 64; ++step) {
    auto w_last = std::span(want).last(static_cast<size_t>(V));
    auto g_last = std::span(got).last(static_cast<size_t>(V));
    const int32_t tw = ReferenceModel::argmax(w_last),
                  tg = ReferenceModel::argmax(g_last);
    if (tw != tg) {
      ++flips;
      EXPECT_LT(top2_gap(w_last), kNearTie)
          << "step " << step << ": CUDA chose " << tg << ", CPU " << tw
          << " with a clear margin";
    }
    const int32_t next = tw; // both continue with the CPU's token
    want = run(*cpu, {1, cs, pos, std::span(&next, 1), false});
    got = run(*dev, {1, ds, pos, std::span(&next, 1), false});
    EXPECT_LE(rel_err(got, want), kLogitRelTol) << "decode step " << step;
    ++pos;
  }
  EXPECT_LE(flips, 2) << "near-tie flips in 64 greedy steps";
}

INSTANTIATE_TEST_SUITE_P(
    Models, CudaE2E,
    ::testing::Values(Case{"qwen35_untied", DType::kF32, 7},
                      Case{"qwen35_tied", DType::kF32, 45},
                      Case{"qwen3_dense", DType::kF32, 16},
                      Case{"qwen35_untied_bf16", DType::kF32, 11},
                      Case{"ninfer-tiny", DType::kF32, 64},
                      Case{"ninfer-tiny", DType::kI8, 7},
                      Case{"qwen3_dense", DType::kI8, 5},
                      Case{"ninfer-tiny", DType::kBF16, 13},
                      Case{"modelopt_nvfp4", DType::kF32, 45},
                      Case{"modelopt_nvfp4", DType::kI8, 7},
                      Case{"bf16_quant_nvfp4", DType::kF32, 45},
                      Case{"bf16_quant_head_nvfp4", DType::kI8, 9}),
    [](const auto &info) {
      std::string n = info.param.model + "_" +
                      std::string(dtype_name(info.param.kv)) + "_chunk" +
                      std::to_string(info.param.chunk);
      std::replace(n.begin(), n.end(), '-', '_');
      return n;
    });

// The Engine on CUDA: a batch of 4 greedy requests (prefill chunk 7, so prompts
// are split and batched with decode) gives the CPU engine's tokens; --spec mtp
// and --spec dflash2 on CUDA give plain CUDA greedy's tokens (lossless). spec:
// "" (plain decoding), "mtp" (K = 3) or "dflash2" (K = 7).
std::vector<std::vector<int32_t>> run_engine(BackendKind kind, DType kv,
                                             const std::string &spec = "",
                                             int tp = 1,
                                             std::vector<int> devices = {}) {
  const Artifact a = Artifact::open(kTiny);
  const ModelConfig c = load_model_config(a);
  std::vector<std::vector<int32_t>> prompts;
  for (uint32_t i = 0; i < 4; ++i)
    prompts.push_back(prompt_of(c, 9 + 13 * i, 100 + i));
  const DrafterFactory drafter =
      spec.empty() ? DrafterFactory{} : make_drafter_factory(spec, a, c, false);
  return run_greedy(a, c, drafter,
                    spec.empty() ? 0 : default_draft_tokens(spec),
                    /*prefill_chunk=*/7, prompts,
                    /*max_tokens=*/64, kind, kv, /*max_context=*/512, tp,
                    std::move(devices))
      .outputs;
}

TEST(CudaE2EEngine, BatchOfFourGreedyMatchesCpu) {
  NINFER_REQUIRE_CUDA();
  for (DType kv : {DType::kF32, DType::kI8}) {
    const auto cpu = run_engine(BackendKind::kCpu, kv);
    const auto dev = run_engine(BackendKind::kCuda, kv);
    for (size_t i = 0; i < cpu.size(); ++i)
      EXPECT_EQ(dev[i], cpu[i]) << "request " << i << ", kv " << dtype_name(kv);
  }
}

TEST(CudaE2EEngine, SpeculationIsLossless) {
  NINFER_REQUIRE_CUDA();
  const auto plain = run_engine(BackendKind::kCuda, DType::kF32);
  for (const std::string spec : {"mtp", "dflash2"}) {
    const auto drafted = run_engine(BackendKind::kCuda, DType::kF32, spec);
    for (size_t i = 0; i < plain.size(); ++i)
      EXPECT_EQ(drafted[i], plain[i]) << spec << ", request " << i;
  }
}

// Requests with penalties and a logit_bias on CUDA (Backend::edit_logits, then
// argmax_rows or top_k_rows on the device) choose the tokens the host chooses
// from whole rows of the same forward (backend_choice off), plain and with MTP
// (K = 3: each verification row edited as if the drafts before it were
// committed); seeded top-k draws, greedy with penalties and greedy with a bias,
// a think block's stop mask.
TEST(CudaE2EEngine, PenaltiesOnTheDeviceChooseAsTheHostDoes) {
  NINFER_REQUIRE_CUDA();
  const Artifact a = Artifact::open(kTiny);
  const ModelConfig c = load_model_config(a);
  const auto run = [&](bool backend_choice, const std::string &spec) {
    EngineOptions o{.max_context = 512, .prefill_chunk = 7, .max_concurrency = 4,
                    .backend = BackendKind::kCuda, .threads = 2,
                    .backend_choice = backend_choice};
    if (!spec.empty()) {
      o.drafter = make_drafter_factory(spec, a, c, false);
      o.draft_tokens = default_draft_tokens(spec);
    }
    Engine e(a, c, o);
    std::vector<std::shared_ptr<Collector>> ws;
    for (uint32_t i = 0; i < 4; ++i) {
      EngineRequest r;
      r.prompt = prompt_of(c, 9 + 13 * i, 100 + i);
      r.max_tokens = 48;
      SamplingParams &s = r.sampling;
      s.seed = 7 + i;
      if (i == 0) s.greedy = true, s.repetition_penalty = 1.5f, s.frequency_penalty = 0.3f;
      if (i == 1) s.greedy = true, s.logit_bias = {{1, 3.0f}, {2, -100.0f}};
      if (i == 2) {  // with a think block's stop mask (ids 0–2 until id 3), applied as edits too
        s.top_k = 20, s.temperature = 0.8f, s.presence_penalty = 0.6f;
        r.constraint = std::make_shared<ThinkStopMask>(std::vector<int32_t>{0, 1, 2}, 3, nullptr);
      }
      if (i == 3) s.top_k = 5, s.temperature = 1.2f, s.repetition_penalty = 0.85f;
      ws.push_back(std::make_shared<Collector>());
      EXPECT_TRUE(e.submit(r, ws.back()).accepted());
    }
    std::vector<std::vector<int32_t>> out;
    for (auto &w : ws) {
      w->wait();
      EXPECT_NE(w->result.reason, FinishReason::kError) << w->result.error;
      out.push_back(w->tokens);
    }
    if (backend_choice) EXPECT_GT(e.stats().top_rows, 0) << spec;
    return out;
  };
  for (const std::string spec : {"", "mtp"}) {
    const auto device = run(true, spec), host = run(false, spec);
    for (size_t i = 0; i < host.size(); ++i)
      EXPECT_EQ(device[i], host[i]) << "request " << i << (spec.empty() ? "" : ", " + spec);
  }
}

// Tensor parallelism on CUDA through the Engine (docs/parallel.md): TP2 with
// both ranks on GPU 0 (their collectives go through host memory: NCCL refuses
// two ranks on one GPU) gives TP1 CUDA's greedy tokens, with int8 KV and with
// MTP. This runs the CUDA path of TpRanks: each rank's backend bound to its
// thread, its shard uploaded (row-parallel column shards packed), the embedding
// looked up from host memory, rank 0's GDN state operations mirrored.
TEST(CudaE2EEngine, TensorParallelOnOneGpuMatchesTp1) {
  NINFER_REQUIRE_CUDA();
  for (DType kv : {DType::kF32, DType::kI8}) {
    const auto tp1 = run_engine(BackendKind::kCuda, kv);
    const auto tp2 = run_engine(BackendKind::kCuda, kv, "", 2, {0, 0});
    for (size_t i = 0; i < tp1.size(); ++i)
      EXPECT_EQ(tp2[i], tp1[i]) << "request " << i << ", kv " << dtype_name(kv);
  }
  const auto tp1 = run_engine(BackendKind::kCuda, DType::kF32);
  // The drafters split over the two ranks (RankDrafters, each share on the
  // device).
  for (const char *spec : {"mtp", "dflash2"}) {
    const auto split =
        run_engine(BackendKind::kCuda, DType::kF32, spec, 2, {0, 0});
    for (size_t i = 0; i < tp1.size(); ++i)
      EXPECT_EQ(split[i], tp1[i]) << spec << ", request " << i;
  }
}

// The same over NCCL, one rank per GPU (check.sh runs *MultiGpu* only where two
// GPUs are visible).
TEST(NcclMultiGpuEngine, Tp2MatchesTp1) {
  NINFER_REQUIRE_CUDA();
  try {
    make_cuda_backend({.device = 1});
  } catch (const Error &e) {
    GTEST_SKIP() << "one GPU visible: NCCL TP2 needs two GPUs (" << e.what()
                 << ")";
  }
  const auto tp1 = run_engine(BackendKind::kCuda, DType::kI8);
  const auto tp2 = run_engine(BackendKind::kCuda, DType::kI8, "", 2, {0, 1});
  for (size_t i = 0; i < tp1.size(); ++i)
    EXPECT_EQ(tp2[i], tp1[i]) << "request " << i;
}

} // namespace
} // namespace ninfer::testing
