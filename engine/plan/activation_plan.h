// Owns the activation and workspace bytes one engine step allocates on a rank: the named scratch buffers of the
// forward (engine/model/model.cpp, swiglu_mlp.h) and of the drafters, and the CUDA backend's op workspaces, for the
// largest step the scheduler plans (docs/memory-plan.md has the formulas).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/speculative/dflash2_config.h"

namespace ninfer {

struct StepShape {
  int64_t tokens = 0;      // T: rows of the largest step = prefill_chunk + max_concurrency · (1 + K)
  int64_t logit_rows = 0;  // R: rows scored by the lm_head = max_concurrency · (1 + K)
  int64_t sequences = 0;   // S: sequences in a step = max_concurrency
};

// The largest step of an engine with these limits (engine/runtime/scheduler.cpp: every decoding sequence brings its
// token and, with a drafter, K drafts to verify; prefilling sequences share prefill_chunk prompt tokens).
StepShape largest_step(int64_t prefill_chunk, int32_t max_concurrency, int32_t draft_tokens);

struct ActivationInput {
  ModelConfig rank_config;  // tp_rank_config(): the rank's heads and MLP rows
  int tp = 1;
  int64_t vocab_share = 0;  // the rank's lm_head rows
  StepShape step;
  bool device = true;       // CUDA: arena rounding and the op workspaces; false: the CPU backend's scratch only
  bool w4a4 = false;        // nvfp4 projections quantize their activations (linear.nvfp4_act)
  int64_t nvfp4_max_k = 0;  // widest input (columns) of the rank's nvfp4 projections
  bool mtp = false;         // the MTP drafter's scratch
  int64_t draft_head_rows = 0;  // rows of the drafter's scoring head (the rank's lm_head or draft_lm_head share)
  int64_t draft_head_total = 0;  // rows of the whole head: a split drafter gathers every rank's scores under TP
  std::optional<Dflash2Config> dflash2;  // the DFlash2 drafter's scratch (its rank-local heads and MLP rows)
};

struct ActivationPart {
  std::string name;  // the scratch buffer's or workspace's name in the code
  uint64_t bytes = 0;
};

struct ActivationPlan {
  std::vector<ActivationPart> scratch;     // ScratchBuffers: f32, grown to 1.5× the request
  std::vector<ActivationPart> workspaces;  // CudaBackend::workspace: grown to 1.25× the request
  uint64_t scratch_bytes() const;
  uint64_t workspace_bytes() const;
};

ActivationPlan plan_activations(const ActivationInput& in);

}  // namespace ninfer
