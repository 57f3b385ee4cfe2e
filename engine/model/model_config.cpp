#include "engine/model/model_config.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"

namespace ninfer {

namespace {

struct Reader {
  const nlohmann::json& j;
  const std::string& source;

  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }

  int64_t positive_int(const char* key) const {
    if (!has(key)) fail(ErrorKind::kInvalidArgument, "{}: config field '{}' is missing", source, key);
    const auto& v = j[key];
    if (!v.is_number_integer() || v.get<int64_t>() <= 0)
      fail(ErrorKind::kInvalidArgument, "{}: config field '{}' must be a positive integer, got {}", source, key,
           v.dump());
    return v.get<int64_t>();
  }
  int64_t positive_int_or(const char* key, int64_t fallback) const { return has(key) ? positive_int(key) : fallback; }
  double number_or(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_number())
      fail(ErrorKind::kInvalidArgument, "{}: config field '{}' must be a number, got {}", source, key, j[key].dump());
    return j[key].get<double>();
  }
  bool bool_or(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_boolean())
      fail(ErrorKind::kInvalidArgument, "{}: config field '{}' must be a boolean, got {}", source, key, j[key].dump());
    return j[key].get<bool>();
  }
};

}  // namespace

std::string architecture_name(Architecture arch) { return arch == Architecture::kQwen3_5 ? "qwen3_5" : "qwen3"; }

int64_t ModelConfig::num_full_attention_layers() const {
  return std::count(layer_types.begin(), layer_types.end(), LayerType::kFullAttention);
}
int64_t ModelConfig::num_linear_attention_layers() const {
  return std::count(layer_types.begin(), layer_types.end(), LayerType::kLinearAttention);
}

ModelConfig ModelConfig::from_hf_json(const nlohmann::json& root, const std::string& source) {
  if (!root.is_object()) fail(ErrorKind::kInvalidArgument, "{}: config is not a JSON object", source);
  std::string top_type = root.value("model_type", std::string());
  // The multimodal qwen3_5 config nests the text model under text_config; tie_word_embeddings may sit on top.
  const nlohmann::json& j = root.contains("text_config") && root["text_config"].is_object() ? root["text_config"] : root;
  Reader r{j, source};
  ModelConfig c;
  c.model_type = j.value("model_type", top_type);
  if (c.model_type == "qwen3_5" || c.model_type == "qwen3_5_text" || top_type == "qwen3_5") {
    c.arch = Architecture::kQwen3_5;
  } else if (c.model_type == "qwen3") {
    c.arch = Architecture::kQwen3;
  } else {
    fail(ErrorKind::kUnsupported, "{}: model_type '{}' is not supported (supported: qwen3_5, qwen3)", source,
         c.model_type);
  }

  c.vocab_size = r.positive_int("vocab_size");
  c.hidden_size = r.positive_int("hidden_size");
  c.intermediate_size = r.positive_int("intermediate_size");
  c.num_layers = r.positive_int("num_hidden_layers");
  c.num_heads = r.positive_int("num_attention_heads");
  c.num_kv_heads = r.positive_int_or("num_key_value_heads", c.num_heads);
  c.head_dim = r.positive_int_or("head_dim", c.hidden_size / c.num_heads);
  c.rms_norm_eps = static_cast<float>(r.number_or("rms_norm_eps", 1e-6));
  c.max_position_embeddings = r.positive_int_or("max_position_embeddings", 32768);
  Reader top{root, source};
  c.tie_word_embeddings = r.has("tie_word_embeddings") ? r.bool_or("tie_word_embeddings", false)
                                                       : top.bool_or("tie_word_embeddings", false);
  if (c.num_heads % c.num_kv_heads != 0)
    fail(ErrorKind::kInvalidArgument, "{}: num_attention_heads {} is not a multiple of num_key_value_heads {}", source,
         c.num_heads, c.num_kv_heads);
  if (r.bool_or("attention_bias", false))
    fail(ErrorKind::kUnsupported, "{}: attention_bias=true is not supported", source);
  std::string act = j.value("hidden_act", std::string("silu"));
  if (act != "silu") fail(ErrorKind::kUnsupported, "{}: hidden_act '{}' is not supported (only silu)", source, act);

  // RoPE: newer transformers write rope_parameters; older configs have top-level rope_theta / rope_scaling.
  const nlohmann::json* rope = nullptr;
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) rope = &j["rope_parameters"];
  Reader rr{rope ? *rope : j, source};
  c.rope_theta = rr.has("rope_theta") ? rr.number_or("rope_theta", 10000.0) : r.number_or("rope_theta", 10000.0);
  double default_partial = c.arch == Architecture::kQwen3_5 ? 0.25 : 1.0;
  c.partial_rotary_factor = rr.has("partial_rotary_factor") ? rr.number_or("partial_rotary_factor", default_partial)
                                                            : r.number_or("partial_rotary_factor", default_partial);
  std::string rope_type = rope ? rope->value("rope_type", std::string("default")) : std::string("default");
  if (j.contains("rope_scaling") && j["rope_scaling"].is_object())
    rope_type = j["rope_scaling"].value("rope_type", j["rope_scaling"].value("type", std::string("default")));
  if (rope_type != "default")
    fail(ErrorKind::kUnsupported, "{}: rope_type '{}' is not supported yet (only default)", source, rope_type);
  if (c.partial_rotary_factor <= 0 || c.partial_rotary_factor > 1)
    fail(ErrorKind::kInvalidArgument, "{}: partial_rotary_factor {} must be in (0, 1]", source,
         c.partial_rotary_factor);
  c.rotary_dim = static_cast<int64_t>(std::llround(c.head_dim * c.partial_rotary_factor));
  if (c.rotary_dim % 2 != 0)
    fail(ErrorKind::kInvalidArgument, "{}: rotary dimension {} (head_dim {} x {}) is odd", source, c.rotary_dim,
         c.head_dim, c.partial_rotary_factor);

  if (c.arch == Architecture::kQwen3) {
    c.layer_types.assign(c.num_layers, LayerType::kFullAttention);
    c.attn_output_gate = false;
    return c;
  }

  c.attn_output_gate = r.bool_or("attn_output_gate", true);
  c.linear_num_key_heads = r.positive_int("linear_num_key_heads");
  c.linear_num_value_heads = r.positive_int("linear_num_value_heads");
  c.linear_key_head_dim = r.positive_int("linear_key_head_dim");
  c.linear_value_head_dim = r.positive_int("linear_value_head_dim");
  c.linear_conv_kernel = r.positive_int("linear_conv_kernel_dim");
  if (c.linear_num_value_heads % c.linear_num_key_heads != 0)
    fail(ErrorKind::kInvalidArgument, "{}: linear_num_value_heads {} is not a multiple of linear_num_key_heads {}",
         source, c.linear_num_value_heads, c.linear_num_key_heads);
  c.mtp_num_layers = r.has("mtp_num_hidden_layers") ? r.positive_int_or("mtp_num_hidden_layers", 0) : 0;

  if (r.has("layer_types")) {
    const auto& lt = j["layer_types"];
    if (!lt.is_array() || static_cast<int64_t>(lt.size()) != c.num_layers)
      fail(ErrorKind::kInvalidArgument, "{}: layer_types must be an array of num_hidden_layers ({}) strings", source,
           c.num_layers);
    for (size_t i = 0; i < lt.size(); ++i) {
      std::string t = lt[i].is_string() ? lt[i].get<std::string>() : lt[i].dump();
      if (t == "linear_attention") c.layer_types.push_back(LayerType::kLinearAttention);
      else if (t == "full_attention") c.layer_types.push_back(LayerType::kFullAttention);
      else
        fail(ErrorKind::kInvalidArgument, "{}: layer_types[{}] is '{}' (expected linear_attention or full_attention)",
             source, i, t);
    }
  } else {
    int64_t interval = r.positive_int_or("full_attention_interval", 4);
    for (int64_t i = 0; i < c.num_layers; ++i)
      c.layer_types.push_back((i + 1) % interval == 0 ? LayerType::kFullAttention : LayerType::kLinearAttention);
  }
  return c;
}

}  // namespace ninfer
