// Owns the binding of artifact tensors to the per-layer weight views the forward reads (zero-copy).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/artifact/artifact.h"
#include "engine/backend/tensor.h"
#include "engine/model/model_config.h"

namespace ninfer {

struct AttentionWeights {
  Tensor q_proj;  // [nh·hd·(gate ? 2 : 1), H]; with the output gate each head's row block is [q | gate]
  Tensor k_proj;  // [n_kv·hd, H]
  Tensor v_proj;  // [n_kv·hd, H]
  Tensor o_proj;  // [H, nh·hd]
  Tensor q_norm;  // [hd]
  Tensor k_norm;  // [hd]
};

struct DeltaNetWeights {
  Tensor in_proj_qkv;  // [2·nk·dk + nv·dv, H], rows [q | k | v]
  Tensor in_proj_z;    // [nv·dv, H]
  Tensor in_proj_b;    // [nv, H]
  Tensor in_proj_a;    // [nv, H]
  Tensor conv1d;       // [C, K] (the checkpoint's [C, 1, K] squeezed)
  Tensor dt_bias;      // [nv]
  Tensor A_log;        // [nv]
  Tensor norm;         // [dv] gated RMSNorm, plain w
  Tensor out_proj;     // [H, nv·dv]
};

struct LayerWeights {
  LayerType type = LayerType::kFullAttention;
  Tensor input_norm, post_norm;  // [H]
  Tensor gate_proj, up_proj;     // [I, H]
  Tensor down_proj;              // [H, I]
  AttentionWeights attn;         // full attention layers
  DeltaNetWeights gdn;           // linear attention layers
};

// Storage of the tensors that are copies rather than views into the artifact (tensor-parallel shards,
// engine/model/weight_shard.h), and their bytes (which the host memory plan counts).
struct ShardCopies {
  std::vector<std::shared_ptr<void>> blocks;
  uint64_t bytes = 0;
};

struct ModelWeights {
  Tensor embed;       // [V, H]
  Tensor final_norm;  // [H]
  Tensor lm_head;     // [V, H]; the embedding when tied
  std::vector<LayerWeights> layers;
  ShardCopies owned;  // a shard's copies; empty for bound weights

  // Views into `artifact`'s mapping; the artifact must outlive the weights. Call after load_model_config().
  static ModelWeights bind(const Artifact& artifact, const ModelConfig& config);
  // The same binding over any source of tensors by their checkpoint names (e.g. a benchmark's device-made weights);
  // `untied_lm_head`: an lm_head.weight exists, else the embedding is the lm_head.
  static ModelWeights bind(const std::function<Tensor(const std::string&)>& get, bool untied_lm_head,
                           const ModelConfig& config);
};

// Every tensor of the weights, for placing them on a device backend (engine/backend/weight_store.h placed()).
template <typename F>
void for_each_tensor(AttentionWeights& w, F&& f) {
  for (Tensor* t : {&w.q_proj, &w.k_proj, &w.v_proj, &w.o_proj, &w.q_norm, &w.k_norm}) f(*t);
}
template <typename F>
void for_each_tensor(DeltaNetWeights& w, F&& f) {
  for (Tensor* t : {&w.in_proj_qkv, &w.in_proj_z, &w.in_proj_b, &w.in_proj_a, &w.conv1d, &w.dt_bias, &w.A_log, &w.norm,
                    &w.out_proj})
    f(*t);
}
template <typename F>
void for_each_tensor(LayerWeights& w, F&& f) {
  for (Tensor* t : {&w.input_norm, &w.post_norm, &w.gate_proj, &w.up_proj, &w.down_proj}) f(*t);
  for_each_tensor(w.attn, f);
  for_each_tensor(w.gdn, f);
}
template <typename F>
void for_each_tensor(ModelWeights& w, F&& f) {
  for (Tensor* t : {&w.embed, &w.final_norm, &w.lm_head}) f(*t);
  for (LayerWeights& l : w.layers) for_each_tensor(l, f);
}

// A zero-copy view of an artifact tensor with its own shape (e.g. conv1d [C,1,K] as [C,K]). An nvfp4 projection
// is [N, K] with data at its codes; linear() finds the scales and trailer by nvfp4_layout() (docs/nvfp4.md).
Tensor tensor_view(const Artifact& artifact, const TensorInfo& info);

}  // namespace ninfer
