// Owns the choice of speculative drafter by method name: what `--spec METHOD [--lm-head-draft]` builds from an artifact.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/artifact/artifact.h"
#include "engine/model/model_config.h"
#include "engine/speculative/drafter.h"
#include "engine/speculative/mtp_drafter.h"

namespace ninfer {

// The methods make_drafter_factory() builds, in the order --spec lists them.
std::vector<std::string> drafter_methods();

// K when --draft-tokens is not given: mtp 3 (the seed's MTP3). An Error for an unknown method.
int32_t default_draft_tokens(std::string_view method);

// What make_drafter_factory() is given, besides the artifact and the model: enough for another process holding the same
// artifact to build the same factory (a follower process of --nnodes builds its share of the drafter from it).
struct DrafterRecipe {
  std::string method;
  bool lm_head_draft = false;
  MtpOptions mtp{};  // MTP only
  bool operator==(const DrafterRecipe& o) const {
    return method == o.method && lm_head_draft == o.lm_head_draft && mtp.hidden == o.mtp.hidden &&
           mtp.recursion == o.mtp.recursion && mtp.kv_block_size == o.mtp.kv_block_size;
  }
};

// Checks now that `artifact` can serve `method` (its section, and draft_lm_head with `lm_head_draft`; an Error naming
// the file and the missing section otherwise, or listing the known methods for an unknown one) and returns the
// factory the engine calls once its backend exists. `artifact` must outlive every drafter the factory builds.
// `mtp` tunes the MTP drafter (which hidden states; docs/mtp.md); other methods ignore it. The factory carries its
// recipe.
DrafterFactory make_drafter_factory(std::string_view method, const Artifact& artifact, const ModelConfig& config,
                                    bool lm_head_draft, const MtpOptions& mtp = {});
DrafterFactory make_drafter_factory(const DrafterRecipe& recipe, const Artifact& artifact, const ModelConfig& config);

// Bytes a drafter of `method` built with `limits` allocates for its own caches (Drafter::cache_bytes()), without
// building it: the memory plan counts them. An Error as make_drafter_factory() for an unknown method or section.
uint64_t drafter_cache_bytes(std::string_view method, const Artifact& artifact, const ModelConfig& config,
                             const DrafterLimits& limits, const MtpOptions& mtp = {});

// One line for the start log: method, layers, proposal head and its rows, e.g. "mtp: 1 MTP layer with its own KV
// cache, conditioned on the target's post-final-norm hidden; optimized proposal head draft_lm_head (2048 of 8192
// rows); verification with the full lm_head".
std::string describe_drafter(std::string_view method, const Artifact& artifact, const ModelConfig& config,
                             bool lm_head_draft);

}  // namespace ninfer
