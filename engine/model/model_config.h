// Owns the model hyper-parameters read from a Hugging Face config.json (qwen3_5 hybrid, qwen3 dense), with
// transformers' semantics for every field that changes the math (docs/pack.md "config.json fields").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ninfer {

enum class Architecture { kQwen3_5, kQwen3 };
enum class LayerType { kLinearAttention, kFullAttention };

struct ModelConfig {
  Architecture arch = Architecture::kQwen3_5;
  std::string model_type;  // as written in config.json ("qwen3_5", "qwen3_5_text", "qwen3")

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  std::vector<LayerType> layer_types;  // num_layers entries; all kFullAttention for qwen3
  float rms_norm_eps = 1e-6f;
  bool tie_word_embeddings = false;
  int64_t max_position_embeddings = 0;
  // qwen3 with use_sliding_window and a sliding_window >= max_position_embeddings: the window, i.e. the longest
  // context that full attention computes exactly (a longer one would need windowed attention). 0: no limit.
  int64_t exact_context_limit = 0;

  // Full (softmax) attention.
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  bool attn_output_gate = false;  // qwen3_5: q_proj emits [q | gate] per head, o_proj input is gated
  // RoPE as transformers computes it: hf_rope_dim = int(head_dim * partial_rotary_factor) (qwen3: head_dim),
  // inv_freq_i = hf_rope_theta^(-2i / hf_rope_dim) for i < ceil(hf_rope_dim / 2), applied (neox rotate-half) to the
  // first rotary_dim = 2 * ceil(hf_rope_dim / 2) dims of each head. Backend::rope(rotary_dim, theta) uses rotary_dim
  // in the exponent, so rope_theta is the base that gives the same frequencies with it:
  // hf_rope_theta^(rotary_dim / hf_rope_dim), equal to hf_rope_theta unless hf_rope_dim is odd.
  double hf_rope_theta = 10000.0;
  double partial_rotary_factor = 1.0;
  int64_t hf_rope_dim = 0;
  int64_t rotary_dim = 0;
  double rope_theta = 10000.0;

  // Gated DeltaNet (linear attention), qwen3_5 only.
  int64_t linear_num_key_heads = 0;
  int64_t linear_num_value_heads = 0;
  int64_t linear_key_head_dim = 0;
  int64_t linear_value_head_dim = 0;
  int64_t linear_conv_kernel = 0;

  // Multi-token prediction layers stored in the checkpoint's mtp section (0 = none).
  int64_t mtp_num_layers = 0;

  int64_t num_full_attention_layers() const;
  int64_t num_linear_attention_layers() const;
  int64_t linear_key_dim() const { return linear_num_key_heads * linear_key_head_dim; }
  int64_t linear_value_dim() const { return linear_num_value_heads * linear_value_head_dim; }
  int64_t linear_conv_dim() const { return 2 * linear_key_dim() + linear_value_dim(); }

  // Parses config.json (a qwen3_5 config with a nested text_config, a flat qwen3_5_text config, or a qwen3
  // config) as transformers 5.x does: an absent field takes the config class's default, rope_scaling and the
  // top-level rope_theta / partial_rotary_factor are folded into rope_parameters. A field that would make
  // transformers compute something ninfer does not (another rope_type, attention bias, sliding windows that bite,
  // ...) is refused: throws Error(kInvalidArgument/kUnsupported) naming `source`, the field and its value.
  static ModelConfig from_hf_json(const nlohmann::json& config, const std::string& source);
};

std::string architecture_name(Architecture arch);

}  // namespace ninfer
