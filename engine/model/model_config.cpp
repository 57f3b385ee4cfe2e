#include "engine/model/model_config.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "engine/core/error.h"

namespace ninfer {

namespace {

// transformers 5.x class defaults (Qwen3_5TextConfig, Qwen3Config): what a field absent from config.json means.
struct ClassDefaults {
  int64_t vocab_size, hidden_size, intermediate_size, num_layers, num_heads, num_kv_heads, head_dim;
  double partial_rotary_factor;  // Qwen3_5TextConfig sets 0.25; Qwen3 has none (1.0, and default RoPE ignores it)
};
constexpr ClassDefaults kQwen35Defaults{248320, 4096, 12288, 32, 16, 4, 256, 0.25};
constexpr ClassDefaults kQwen3Defaults{151936, 4096, 22016, 32, 32, 32, 128, 1.0};
constexpr double kDefaultRopeTheta = 10000.0;  // PreTrainedConfig.default_theta
constexpr int64_t kDefaultMaxPositions = 32768;
// Upper bounds on config sizes, far beyond any released model, so that what is derived from them (element counts,
// per-layer lists, int32 token ids and positions) cannot overflow or ask for absurd memory before the weights are
// even looked at.
constexpr int64_t kMaxSize = int64_t{1} << 24;    // widths, head counts, head dims
constexpr int64_t kMaxLayers = int64_t{1} << 16;  // num_hidden_layers, mtp_num_hidden_layers
constexpr int64_t kMaxIds = INT32_MAX;            // vocab_size, max_position_embeddings: int32 ids and positions

struct Reader {
  const nlohmann::json& j;
  const std::string& source;
  const char* where = "";  // "" or "text_config." / "rope_parameters.": prefixes the field in messages

  bool present(const char* key) const { return j.contains(key); }
  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }

  // An integer in [lo, max]; v.get<int64_t>() of an unsigned beyond INT64_MAX is negative, so it is refused too.
  int64_t int_in(const char* key, int64_t lo, int64_t max, const char* what) const {
    const auto& v = j[key];
    if (!v.is_number_integer() || v.get<int64_t>() < lo)
      fail(ErrorKind::kInvalidArgument, "{}: config field '{}{}' must be a {} integer, got {}", source, where, key,
           what, v.dump());
    if (v.get<int64_t>() > max)
      fail(ErrorKind::kInvalidArgument, "{}: config field '{}{}' is {}, beyond ninfer's limit of {}", source, where,
           key, v.get<int64_t>(), max);
    return v.get<int64_t>();
  }
  int64_t positive_int(const char* key, int64_t max = kMaxSize) const { return int_in(key, 1, max, "positive"); }
  // Absent: the class default. Present as null: refused (transformers' strict config rejects it too).
  int64_t positive_int_or(const char* key, int64_t fallback, int64_t max = kMaxSize) const {
    return present(key) ? positive_int(key, max) : fallback;
  }
  int64_t nonnegative_int_or(const char* key, int64_t fallback, int64_t max = kMaxSize) const {
    return present(key) ? int_in(key, 0, max, "non-negative") : fallback;
  }
  double positive_number(const char* key) const {
    const auto& v = j[key];
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      fail(ErrorKind::kInvalidArgument, "{}: config field '{}{}' must be a finite number > 0, got {}", source, where,
           key, v.dump());
    return v.get<double>();
  }
  bool bool_or(const char* key, bool fallback) const {
    if (!present(key)) return fallback;
    if (!j[key].is_boolean())
      fail(ErrorKind::kInvalidArgument, "{}: config field '{}{}' must be a boolean, got {}", source, where, key,
           j[key].dump());
    return j[key].get<bool>();
  }
  std::string string_or(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_string())
      fail(ErrorKind::kInvalidArgument, "{}: config field '{}{}' must be a string, got {}", source, where, key,
           j[key].dump());
    return j[key].get<std::string>();
  }
};

// transformers' remap_legacy_layer_types, then the names each architecture runs.
std::vector<std::string> read_layer_types(const Reader& r, int64_t num_layers) {
  const auto& lt = r.j["layer_types"];
  if (!lt.is_array() || static_cast<int64_t>(lt.size()) != num_layers)
    fail(ErrorKind::kInvalidArgument, "{}: config field '{}layer_types' must be an array of num_hidden_layers ({}) "
         "strings, got {}", r.source, r.where, num_layers, lt.dump());
  std::vector<std::string> out;
  for (size_t i = 0; i < lt.size(); ++i) {
    if (!lt[i].is_string())
      fail(ErrorKind::kInvalidArgument, "{}: config field '{}layer_types[{}]' must be a string, got {}", r.source,
           r.where, i, lt[i].dump());
    std::string t = lt[i].get<std::string>();
    if (t == "mamba") t = "linear_attention";
    if (t == "attention") t = "full_attention";
    out.push_back(t);
  }
  return out;
}

// RoPE fields as transformers' convert_rope_params_to_dict / standardize_rope_params fold them: a non-empty
// rope_scaling replaces rope_parameters; rope_theta and partial_rotary_factor inside it win over the top-level ones.
void read_rope(const Reader& r, const ClassDefaults& d, ModelConfig& c) {
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json* rope = &empty;
  const char* rope_field = "rope_parameters";
  if (r.has("rope_scaling") && !(r.j["rope_scaling"].is_object() && r.j["rope_scaling"].empty())) {
    rope = &r.j["rope_scaling"];
    rope_field = "rope_scaling";
  } else if (r.has("rope_parameters")) {
    rope = &r.j["rope_parameters"];
  }
  if (!rope->is_object())
    fail(ErrorKind::kInvalidArgument, "{}: config field '{}{}' must be an object, got {}", r.source, r.where,
         rope_field, rope->dump());
  const std::string prefix = std::string(r.where) + rope_field + ".";
  Reader rr{*rope, r.source, prefix.c_str()};
  if (r.has("layer_types"))
    for (const auto& t : r.j["layer_types"])
      if (t.is_string() && rope->contains(t.get<std::string>()))
        fail(ErrorKind::kUnsupported, "{}: config field '{}{}' is per layer type (key '{}'); ninfer supports one "
             "RoPE for all layers", r.source, r.where, rope_field, t.get<std::string>());

  const std::string type = rr.string_or("rope_type", rr.string_or("type", "default"));
  if (type != "default")
    fail(ErrorKind::kUnsupported, "{}: config field '{}rope_type' is '{}': ninfer implements only the default RoPE "
         "(linear, dynamic, yarn, longrope, llama3 and other scaled RoPE are refused)", r.source, prefix, type);

  c.hf_rope_theta = rr.present("rope_theta") ? rr.positive_number("rope_theta")
                    : r.present("rope_theta") ? r.positive_number("rope_theta")
                                              : kDefaultRopeTheta;
  c.partial_rotary_factor = rr.present("partial_rotary_factor") ? rr.positive_number("partial_rotary_factor")
                            : r.present("partial_rotary_factor") ? r.positive_number("partial_rotary_factor")
                                                                 : d.partial_rotary_factor;
  // Qwen3's default RoPE (Qwen3RotaryEmbedding.compute_default_rope_parameters) rotates all of head_dim whatever
  // partial_rotary_factor says; Qwen3.5's uses dim = int(head_dim * partial_rotary_factor), truncated as Python's
  // int() does, both for the number of frequencies and in their exponent.
  const double rope_dim = c.arch == Architecture::kQwen3 ? static_cast<double>(c.head_dim)
                                                        : static_cast<double>(c.head_dim) * c.partial_rotary_factor;
  // Converted only inside [0, head_dim] (a larger double may not fit an int64); outside it is refused below.
  c.hf_rope_dim = rope_dim <= static_cast<double>(c.head_dim) ? static_cast<int64_t>(rope_dim) : c.head_dim + 1;
  c.rotary_dim = c.hf_rope_dim + (c.hf_rope_dim % 2);
  if (c.hf_rope_dim < 1 || c.rotary_dim > c.head_dim)
    fail(ErrorKind::kInvalidArgument, "{}: RoPE dimension int(head_dim {} x partial_rotary_factor {}) = {} rotates {} "
         "dims, outside [2, head_dim] (transformers cannot run it either)", r.source, c.head_dim,
         c.partial_rotary_factor, std::floor(rope_dim), c.rotary_dim);
  c.rope_theta = c.hf_rope_dim == c.rotary_dim
                     ? c.hf_rope_theta
                     : std::pow(c.hf_rope_theta, static_cast<double>(c.rotary_dim) / static_cast<double>(c.hf_rope_dim));
}

// Qwen3 sliding windows (Qwen3Config: the window exists only with use_sliding_window; layer_types defaults to
// sliding_attention from max_window_layers on). A window that can bite within max_position_embeddings is refused.
void read_qwen3_layers(const Reader& r, ModelConfig& c) {
  const bool use_window = r.bool_or("use_sliding_window", false);
  std::optional<int64_t> window;
  if (use_window && !r.present("sliding_window")) window = 4096;
  else if (use_window && r.has("sliding_window")) window = r.positive_int("sliding_window", kMaxIds);
  const int64_t max_window_layers = r.nonnegative_int_or("max_window_layers", 28);
  std::vector<std::string> types;
  const bool explicit_types = r.has("layer_types");
  if (explicit_types) {
    types = read_layer_types(r, c.num_layers);
  } else {
    for (int64_t i = 0; i < c.num_layers; ++i)
      types.push_back(window && i >= max_window_layers ? "sliding_attention" : "full_attention");
  }
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] == "full_attention") continue;
    if (types[i] != "sliding_attention")
      fail(ErrorKind::kUnsupported, "{}: config field '{}layer_types[{}]' is '{}' (qwen3: full_attention or "
           "sliding_attention)", r.source, r.where, i, types[i]);
    const std::string why = explicit_types ? fmt::format("layer_types[{}] is sliding_attention", i)
                                           : fmt::format("max_window_layers {} makes layer {} sliding_attention",
                                                         max_window_layers, i);
    if (!window)
      fail(ErrorKind::kInvalidArgument, "{}: {} but there is no window (use_sliding_window {}, sliding_window {}); "
           "transformers cannot run it either", r.source, why, use_window,
           r.present("sliding_window") ? r.j["sliding_window"].dump() : "absent");
    if (*window < c.max_position_embeddings)
      fail(ErrorKind::kUnsupported, "{}: use_sliding_window true with sliding_window {} < max_position_embeddings {} "
           "({}): positions >= {} would attend to a window; ninfer has no windowed attention", r.source, *window,
           c.max_position_embeddings, why, *window);
    c.exact_context_limit = *window;
  }
  c.layer_types.assign(c.num_layers, LayerType::kFullAttention);
}

void read_qwen35_layers(const Reader& r, ModelConfig& c) {
  std::vector<std::string> types;
  if (r.has("layer_types")) {
    types = read_layer_types(r, c.num_layers);
  } else {  // Qwen3_5TextConfig: every full_attention_interval-th layer is full attention
    const int64_t interval = r.positive_int_or("full_attention_interval", 4);
    for (int64_t i = 0; i < c.num_layers; ++i)
      types.push_back((i + 1) % interval == 0 ? "full_attention" : "linear_attention");
  }
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] == "linear_attention") c.layer_types.push_back(LayerType::kLinearAttention);
    else if (types[i] == "full_attention") c.layer_types.push_back(LayerType::kFullAttention);
    else
      fail(ErrorKind::kUnsupported, "{}: config field '{}layer_types[{}]' is '{}' (qwen3_5: linear_attention or "
           "full_attention)", r.source, r.where, i, types[i]);
  }
}

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
  const std::string top_type = root.contains("model_type") && root["model_type"].is_string()
                                   ? root["model_type"].get<std::string>()
                                   : std::string();
  // The multimodal qwen3_5 config (Qwen3_5ForConditionalGeneration) nests the text model under text_config.
  const bool nested = top_type == "qwen3_5";
  if (nested && !(root.contains("text_config") && root["text_config"].is_object()))
    fail(ErrorKind::kInvalidArgument, "{}: model_type 'qwen3_5' needs a 'text_config' object", source);
  const nlohmann::json& j = nested ? root["text_config"] : root;
  Reader r{j, source, nested ? "text_config." : ""};
  ModelConfig c;
  c.model_type = r.string_or("model_type", top_type);
  if (nested || c.model_type == "qwen3_5_text") {
    c.arch = Architecture::kQwen3_5;
  } else if (c.model_type == "qwen3") {
    c.arch = Architecture::kQwen3;
  } else {
    fail(ErrorKind::kUnsupported, "{}: model_type '{}' is not supported (supported: qwen3_5, qwen3_5_text, qwen3)",
         source, c.model_type);
  }
  const ClassDefaults& d = c.arch == Architecture::kQwen3_5 ? kQwen35Defaults : kQwen3Defaults;

  c.vocab_size = r.positive_int_or("vocab_size", d.vocab_size, kMaxIds);
  c.hidden_size = r.positive_int_or("hidden_size", d.hidden_size);
  c.intermediate_size = r.positive_int_or("intermediate_size", d.intermediate_size);
  c.num_layers = r.positive_int_or("num_hidden_layers", d.num_layers, kMaxLayers);
  c.num_heads = r.positive_int_or("num_attention_heads", d.num_heads);
  // Qwen3Config turns a null num_key_value_heads into num_attention_heads; Qwen3_5TextConfig rejects null.
  c.num_kv_heads = c.arch == Architecture::kQwen3 && r.present("num_key_value_heads") && !r.has("num_key_value_heads")
                       ? c.num_heads
                       : r.positive_int_or("num_key_value_heads", d.num_kv_heads);
  // An absent head_dim is the class default (256 / 128), not hidden_size / num_attention_heads.
  c.head_dim = r.positive_int_or("head_dim", d.head_dim);
  c.rms_norm_eps = static_cast<float>(r.present("rms_norm_eps") ? r.positive_number("rms_norm_eps") : 1e-6);
  c.max_position_embeddings = r.positive_int_or("max_position_embeddings", kDefaultMaxPositions, kMaxIds);
  if (c.num_heads % c.num_kv_heads != 0)
    fail(ErrorKind::kInvalidArgument, "{}: num_attention_heads {} is not a multiple of num_key_value_heads {}", source,
         c.num_heads, c.num_kv_heads);

  // Qwen3_5ForConditionalGeneration ties by the top-level field; Qwen3_5ForCausalLM by the text config's. A nested
  // config where the two disagree means different models in the two classes: refused.
  c.tie_word_embeddings = r.bool_or("tie_word_embeddings", false);
  if (nested) {
    Reader top{root, source};
    const bool top_tie = top.bool_or("tie_word_embeddings", false);
    if (r.present("tie_word_embeddings") && top_tie != c.tie_word_embeddings)
      fail(ErrorKind::kInvalidArgument, "{}: tie_word_embeddings {} disagrees with text_config.tie_word_embeddings {}",
           source, top_tie, c.tie_word_embeddings);
    c.tie_word_embeddings = top_tie;
  }

  if (r.bool_or("attention_bias", false))
    fail(ErrorKind::kUnsupported, "{}: config field '{}attention_bias' is true: q/k/v/o biases are not supported",
         source, r.where);
  const std::string act = r.string_or("hidden_act", "silu");
  if (act != "silu")
    fail(ErrorKind::kUnsupported, "{}: config field '{}hidden_act' is '{}' (only silu)", source, r.where, act);

  read_rope(r, d, c);

  if (c.arch == Architecture::kQwen3) {
    c.attn_output_gate = false;
    read_qwen3_layers(r, c);
    return c;
  }

  // transformers' Qwen3_5Attention always gates; a config that says otherwise is not a model it runs.
  c.attn_output_gate = true;
  if (!r.bool_or("attn_output_gate", true))
    fail(ErrorKind::kUnsupported, "{}: config field '{}attn_output_gate' is false: Qwen3.5 attention is always gated",
         source, r.where);
  c.linear_num_key_heads = r.positive_int_or("linear_num_key_heads", 16);
  c.linear_num_value_heads = r.positive_int_or("linear_num_value_heads", 32);
  c.linear_key_head_dim = r.positive_int_or("linear_key_head_dim", 128);
  c.linear_value_head_dim = r.positive_int_or("linear_value_head_dim", 128);
  c.linear_conv_kernel = r.positive_int_or("linear_conv_kernel_dim", 4);
  if (c.linear_num_value_heads % c.linear_num_key_heads != 0)
    fail(ErrorKind::kInvalidArgument, "{}: linear_num_value_heads {} is not a multiple of linear_num_key_heads {}",
         source, c.linear_num_value_heads, c.linear_num_key_heads);
  // MTP is not part of transformers' model (it drops mtp.*): these fields only shape the mtp section.
  c.mtp_num_layers = r.nonnegative_int_or("mtp_num_hidden_layers", 0, kMaxLayers);
  if (r.bool_or("mtp_use_dedicated_embeddings", false))
    fail(ErrorKind::kUnsupported, "{}: config field '{}mtp_use_dedicated_embeddings' is true: the MTP layer must share "
         "the model's embeddings", source, r.where);
  read_qwen35_layers(r, c);
  return c;
}

}  // namespace ninfer
