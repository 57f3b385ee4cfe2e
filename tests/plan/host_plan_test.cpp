// The host plan of CPU ranks (engine/plan/host_plan.h, docs/memory-plan.md) against what the engine's own code
// allocates: the shard copies WeightShard makes at TP2 / TP4, and the activation scratch and CPU backend buffers a
// forward of the largest step leaves behind.
#include <gtest/gtest.h>

#include <numeric>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/model/model_artifact.h"
#include "engine/model/model_weights.h"
#include "engine/model/weight_shard.h"
#include "engine/plan/host_plan.h"
#include "engine/plan/plan_tensors.h"
#include "engine/runtime/memory_plan.h"
#include "engine/speculative/mtp_drafter.h"
#include "server/serve_memory_plan.h"
#include "server/serve_options.h"
#include "tests/model/reference_model.h"

namespace ninfer {
namespace {

const std::string kTinyNvfp4 = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny-nvfp4.ninfer";

DevicePlanInput host_input(const Artifact& a, const ModelConfig& c, int tp, PlanSpec spec, int64_t prefill_chunk) {
  DevicePlanInput in;
  in.config = c;
  in.tensors = plan_tensors_from_artifact(a);
  in.tp = tp;
  in.available_bytes.assign(static_cast<size_t>(tp), 0);
  in.max_context = 256;
  in.max_concurrency = 1;
  in.prefill_chunk = prefill_chunk;
  in.spec = spec;
  in.draft_tokens = spec == PlanSpec::kNone ? 0 : 2;
  in.embedding_on_device = true;
  return in;
}

// Σ over ranks of the bytes shard_weights() (and, with MTP, shard_mtp_weights()) copy, against the plan's.
void expect_copies_match(const std::string& path, int tp, bool mtp) {
  const Artifact a = Artifact::open(path);
  const ModelConfig c = load_model_config(a);
  const ModelWeights full = ModelWeights::bind(a, c);
  uint64_t copied = 0;
  for (int r = 0; r < tp; ++r) {
    copied += shard_weights(full, c, tp_layout(c, r, tp)).owned.bytes;
    if (mtp) copied += shard_mtp_weights(MtpWeights::bind(a, c, false), c, r, tp).owned.bytes;
  }
  const HostRanksPlan plan = plan_host_ranks(host_input(a, c, tp, mtp ? PlanSpec::kMtp : PlanSpec::kNone, 64), 2, false);
  ASSERT_EQ(plan.ranks.size(), static_cast<size_t>(tp));
  EXPECT_EQ(plan.shard_copies(), copied) << path << " tp " << tp << (mtp ? " mtp" : "");
}

TEST(HostPlan, ShardCopiesAreWhatTheShardsCopy) {
  for (int tp : {2, 4}) {
    expect_copies_match(kTinyNvfp4, tp, false);  // nvfp4 projections: every shard a copy
    expect_copies_match(kTinyNvfp4, tp, true);
  }
  testing::ReferenceModel hybrid("qwen35_tied");  // bf16: only GDN in_proj_qkv / conv1d rows are copies
  expect_copies_match(hybrid.artifact->path(), 2, false);
  // Nothing is sharded at TP1.
  const Artifact a = Artifact::open(kTinyNvfp4);
  const ModelConfig c = load_model_config(a);
  EXPECT_EQ(plan_host_ranks(host_input(a, c, 1, PlanSpec::kNone, 64), 2, false).shard_copies(), 0u);
}

TEST(HostPlan, ActivationsAndWorkspacesCoverTheLargestStep) {
  // One sequence prefilling the largest step of --prefill-chunk 95, --max-concurrency 1: T = 95 + 1 rows.
  constexpr int64_t kChunk = 95, T = kChunk + 1;
  testing::ReferenceModel m(testing::ReferenceModel::Packed{kTinyNvfp4}, DType::kF32, 2);
  std::vector<int32_t> tokens(static_cast<size_t>(T));
  std::iota(tokens.begin(), tokens.end(), 3);
  const int32_t slot = m.state->acquire();
  SequenceStep s{1, slot, 0, tokens, false};
  m.runner->step(std::span(&s, 1));
  const auto& cpu = dynamic_cast<const cpu::CpuBackend&>(*m.backend);
  const CpuWorkspaceBytes held = cpu.workspace_bytes();

  const HostRanksPlan plan = plan_host_ranks(host_input(*m.artifact, m.config, 1, PlanSpec::kNone, kChunk), 2, false);
  ASSERT_EQ(plan.ranks.size(), 1u);
  const HostRankPlan& r = plan.ranks[0];
  EXPECT_GE(r.activations, m.model->scratch_bytes());
  EXPECT_GE(r.workspaces, held.total());
  // The W4A4 rows of the widest nvfp4 input (down_proj, K = intermediate) are the largest buffer: held for all T rows.
  cpu::Nvfp4A4Rows layout;
  cpu::nvfp4_size_a4(0, m.config.intermediate_size, layout);
  EXPECT_GE(held.linear, static_cast<uint64_t>(T * layout.row_bytes));
  EXPECT_GT(held.thread_scratch, 0u);
  // The forward's scratch is every named buffer the plan lists, at the same 1.5× growth; the plan's extra rows are
  // the lm_head's (R = 1 here) and the buffers of layer kinds the forward skipped: within 10%.
  EXPECT_LE(r.activations, m.model->scratch_bytes() + m.model->scratch_bytes() / 10);
}

TEST(HostPlan, KvAndStateArePerRankAndReplicasCount) {
  const Artifact a = Artifact::open(kTinyNvfp4);
  const ModelConfig c = load_model_config(a);
  MemoryPlanInput in{.max_context = 256, .max_concurrency = 2, .kv_dtype = DType::kI8};
  const MemoryPlan one = plan_memory(c, in);
  const int many = static_cast<int>(c.num_kv_heads) * 2;  // more ranks than KV heads: each keeps a replica
  in.tp = many;
  ASSERT_NO_THROW(tp_layout(c, 0, many)) << "ninfer-tiny cannot be cut " << many << " ways";
  const MemoryPlan split = plan_memory(c, in);
  uint64_t kv_per_token = 0;
  for (int r = 0; r < many; ++r) kv_per_token += KvCache::bytes_per_token(tp_rank_config(c, tp_layout(c, r, many)), DType::kI8);
  EXPECT_EQ(split.kv_bytes, static_cast<uint64_t>(split.kv_tokens) * kv_per_token);
  EXPECT_EQ(split.kv_bytes, 2 * one.kv_bytes);  // every head held twice
  in.tp = 2;
  EXPECT_EQ(plan_memory(c, in).kv_bytes, one.kv_bytes);
}

// The weights the host plan counts are the bytes a resident load copies (with --mmap, the same tensors in the
// mapping), and what stays mapped is what every rank copies into its shard; at TP1 and TP2, with and without MTP.
TEST(HostPlan, WeightsAreWhatAResidentLoadCopies) {
  for (const std::vector<std::string>& flags : std::vector<std::vector<std::string>>{
           {"--backend", "cpu"},
           {"--backend", "cpu", "--spec", "mtp"},
           {"--backend", "cpu", "--tp", "2"},
           {"--backend", "cpu", "--tp", "2", "--spec", "mtp"},
           {"--backend", "cpu", "--tp", "2", "--mmap"}}) {
    std::vector<std::string> args{"ninfer-serve"};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto parsed = server::parse_serve_options(args, kTinyNvfp4);
    ASSERT_TRUE(parsed.options) << parsed.message;
    const server::ServeOptions& o = *parsed.options;
    Artifact a = Artifact::open(kTinyNvfp4);
    const server::PlanModel m = server::plan_model_from_artifact(a, o);
    const MemoryPlanInput in = server::host_plan_input(o, m, 0, true);
    const std::vector<std::string> kept = server::shard_copied_tensors(o, m);
    EXPECT_EQ(kept.empty(), o.tp == 1) << ::testing::PrintToString(flags);
    a.make_resident(server::served_sections(o), kept, false);
    EXPECT_EQ(in.weights_resident, !o.mmap.value_or(false)) << ::testing::PrintToString(flags);
    EXPECT_EQ(in.weight_bytes, a.resident_bytes()) << ::testing::PrintToString(flags);
    for (const std::string& name : kept) EXPECT_FALSE(a.resident(a.require(name))) << name;
  }
}

}  // namespace
}  // namespace ninfer
