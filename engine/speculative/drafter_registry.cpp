#include "engine/speculative/drafter_registry.h"

#include <memory>

#include <fmt/format.h>

#include "engine/core/error.h"
#include "engine/model/weight_shard.h"
#include "engine/speculative/dflash2_spec_drafter.h"

namespace ninfer {

std::vector<std::string> drafter_methods() { return {"mtp", "dflash2"}; }

namespace {

[[noreturn]] void unknown_method(const std::string& where, std::string_view method) {
  fail(ErrorKind::kInvalidArgument, "{}unknown speculative method '{}' (known: {})", where, method,
       fmt::join(drafter_methods(), ", "));
}

}  // namespace

int32_t default_draft_tokens(std::string_view method) {
  if (method == "mtp") return 3;
  if (method == "dflash2") return 7;  // the shipped drafter's block of 8 (docs/dflash2.md)
  unknown_method("", method);
}

DrafterFactory make_drafter_factory(std::string_view method, const Artifact& artifact, const ModelConfig& config,
                                    bool lm_head_draft, const MtpOptions& mtp) {
  MtpOptions options = mtp;
  options.lm_head_draft = lm_head_draft;
  return make_drafter_factory(DrafterRecipe{.method = std::string(method), .lm_head_draft = lm_head_draft, .mtp = options},
                              artifact, config);
}

namespace {

DrafterFactory factory_of(const DrafterRecipe& recipe, const Artifact& artifact, const ModelConfig& config) {
  const std::string_view method = recipe.method;
  const bool lm_head_draft = recipe.lm_head_draft;
  if (method == "mtp") {
    auto weights = std::make_shared<const MtpWeights>(MtpWeights::bind(artifact, config, lm_head_draft));
    MtpOptions options = recipe.mtp;
    options.lm_head_draft = lm_head_draft;
    DrafterFactory f = [weights, config, options](WeightStore& store, const DrafterLimits& limits) {
      return std::unique_ptr<Drafter>(
          std::make_unique<MtpDrafter>(config, placed(*weights, store, "mtp"), store.backend(), limits, options));
    };
    f.shard = [weights, config, options](WeightStore& store, const DrafterLimits& limits, const DrafterRank& rank) {
      if (!rank.comm) fail(ErrorKind::kInternal, "MTP drafter shard {} of {} without a communicator", rank.rank, rank.size);
      const ModelConfig rank_config = tp_rank_config(config, tp_layout(config, rank.rank, rank.size));
      MtpWeights shard = shard_mtp_weights(*weights, config, rank.rank, rank.size);
      shard.embed = {};  // under TP the embedding stays in host memory, as the target's (placed_shard)
      shard = placed(std::move(shard), store, fmt::format("mtp rank {}", rank.rank));
      shard.embed = weights->embed;
      return std::unique_ptr<Drafter>(
          std::make_unique<MtpDrafter>(rank_config, std::move(shard), store.backend(), limits, options, *rank.comm));
    };
    return f;
  }
  if (method == "dflash2") return make_dflash2_factory(artifact, config, lm_head_draft);
  unknown_method(artifact.path() + ": ", method);
}

}  // namespace

DrafterFactory make_drafter_factory(const DrafterRecipe& recipe, const Artifact& artifact, const ModelConfig& config) {
  DrafterFactory f = factory_of(recipe, artifact, config);
  f.recipe = std::make_shared<const DrafterRecipe>(recipe);
  return f;
}

uint64_t drafter_cache_bytes(std::string_view method, const Artifact& artifact, const ModelConfig& config,
                             const DrafterLimits& limits, const MtpOptions& mtp) {
  if (method == "mtp") return MtpDrafter::planned_cache_bytes(config, limits, mtp);
  if (method == "dflash2")
    return dflash2_cache_bytes(load_dflash2_config(artifact, config), limits.max_sequences, limits.max_context);
  unknown_method(artifact.path() + ": ", method);
}

std::string describe_drafter(std::string_view method, const Artifact& artifact, const ModelConfig& config,
                             bool lm_head_draft) {
  if (method == "mtp") {
    const MtpWeights w = MtpWeights::bind(artifact, config, lm_head_draft);
    return fmt::format("mtp: {} MTP layer with its own KV cache, conditioned on the target's post-final-norm hidden; "
                       "{} proposal head {} ({} of {} rows); verification with the full lm_head",
                       config.mtp_num_layers, lm_head_draft ? "optimized" : "full",
                       lm_head_draft ? "draft_lm_head" : "lm_head", w.head.dim(0), config.vocab_size);
  }
  if (method == "dflash2") return describe_dflash2(artifact, config, lm_head_draft);
  unknown_method(artifact.path() + ": ", method);
}

}  // namespace ninfer
