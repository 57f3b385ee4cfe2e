// Owns the DFlash2 drafter's description in an artifact: the `dflash2.config` tensor, its checks, the weight views.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/artifact/artifact.h"
#include "engine/backend/tensor.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_shard.h"

namespace ninfer {

// Layout of the f32 tensor `dflash2.config` (docs/dflash2.md). Every field but rope_theta / rms_norm_eps is an
// integer stored exactly in f32; target_layer_ids follow the fixed fields.
namespace dflash2_config_field {
enum : int64_t {
  kFormatVersion = 0,  // 1
  kHiddenSize,
  kNumLayers,
  kNumHeads,
  kNumKvHeads,
  kHeadDim,
  kIntermediateSize,
  kBlockSize,  // anchor + draft tokens
  kMaskTokenId,
  kRopeTheta,
  kRmsNormEps,
  kNumTargetLayers,
  kTargetLayerIds,  // first of kNumTargetLayers entries
};
}  // namespace dflash2_config_field

inline constexpr int64_t kDflash2ConfigVersion = 1;

struct Dflash2Config {
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;
  int64_t block_size = 0;  // B: one forward proposes B − 1 tokens
  int64_t mask_token_id = 0;
  double rope_theta = 0;
  float rms_norm_eps = 0;
  std::vector<int64_t> target_layer_ids;  // outputs of these target decoder layers, concatenated in this order

  int64_t num_draft_tokens() const { return block_size - 1; }
  int64_t feature_size() const { return static_cast<int64_t>(target_layer_ids.size()) * hidden_size; }
};

struct Dflash2LayerWeights {
  Tensor input_norm, post_norm;            // [H]
  Tensor q_proj, k_proj, v_proj, o_proj;   // [nh·hd, H], [nkv·hd, H] ×2, [H, nh·hd]
  Tensor q_norm, k_norm;                   // [hd]
  Tensor gate_proj, up_proj, down_proj;    // [I, H] ×2, [H, I]
};

struct Dflash2Weights {
  Tensor fc;              // [H, n_feat·H]
  Tensor hidden_norm;     // [H]
  Tensor mask_embedding;  // [1, H] (the artifact's [H] viewed as a one-row table)
  Tensor final_norm;      // [H]
  std::vector<Dflash2LayerWeights> layers;
  ShardCopies owned;  // a rank's shard copies (see WeightShard)
};

// Rank `layout.rank`'s share of the drafter's weights under tensor parallelism: every layer's query and KV heads, MLP
// rows, o_proj and down_proj columns, cut as the target's layers are (layout from tp_layout(dflash2_as_model_config));
// fc, the norms and the mask embedding whole.
Dflash2Weights shard_dflash2_weights(const Dflash2Weights& full, const Dflash2Config& config, const TpLayout& layout);

// Every tensor of the DFlash2 weights (for placing them on a device backend).
template <typename F>
void for_each_tensor(Dflash2Weights& w, F&& f) {
  for (Tensor* t : {&w.fc, &w.hidden_norm, &w.mask_embedding, &w.final_norm}) f(*t);
  for (Dflash2LayerWeights& l : w.layers)
    for (Tensor* t : {&l.input_norm, &l.post_norm, &l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.q_norm, &l.k_norm,
                      &l.gate_proj, &l.up_proj, &l.down_proj})
      f(*t);
}

// The drafter's layers as a ModelConfig of full-attention layers (for tp_layout and KV sizing).
ModelConfig dflash2_as_model_config(const Dflash2Config& config, const ModelConfig& target);
// The drafter's heads and MLP rows on one rank of a tensor-parallel group (its TpLayout from
// tp_layout(dflash2_as_model_config(...))), as a config of the same kind.
Dflash2Config dflash2_rank_config(const Dflash2Config& config, const TpLayout& layout);

// True when the artifact carries a dflash2 section.
bool has_dflash2(const Artifact& artifact);
// Reads and checks `dflash2.config` against the target (hidden size, layer ids in range, mask id in the vocab,
// head shapes) and every dflash2 tensor (presence, shape, dtype f32/bf16/f16), naming the file, tensor and field.
Dflash2Config load_dflash2_config(const Artifact& artifact, const ModelConfig& target);
// Zero-copy views of the dflash2 tensors; call after load_dflash2_config().
Dflash2Weights bind_dflash2_weights(const Artifact& artifact, const Dflash2Config& config);
// The tensor names and shapes a config implies (the schema the checks and the Python exporter share).
std::vector<std::pair<std::string, std::vector<int64_t>>> dflash2_weight_schema(const Dflash2Config& config);

}  // namespace ninfer
