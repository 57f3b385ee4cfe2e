#include "bench/common/synthetic_checkpoint.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "engine/artifact/mapped_file.h"
#include "engine/hf/safetensors_writer.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_schema.h"

namespace ninfer::bench {

namespace {

uint64_t weight_bytes(const nlohmann::json &config) {
  ModelConfig c = ModelConfig::from_hf_json(config, "synthetic");
  uint64_t n = 0;
  for (const auto &w : expected_weights(c, false)) {
    uint64_t e = 1;
    for (auto d : w.shape)
      e *= static_cast<uint64_t>(d);
    n += 2 * e;
  }
  return n;
}

} // namespace

nlohmann::json synthetic_qwen35_config(uint64_t target_bytes) {
  nlohmann::json c = {{"model_type", "qwen3_5_text"},
                      {"architectures", {"Qwen3_5ForCausalLM"}},
                      {"vocab_size", 151936},
                      {"hidden_size", 1024},
                      {"intermediate_size", 3584},
                      {"num_attention_heads", 8},
                      {"num_key_value_heads", 2},
                      {"head_dim", 256},
                      {"linear_num_key_heads", 16},
                      {"linear_num_value_heads", 16},
                      {"linear_key_head_dim", 128},
                      {"linear_value_head_dim", 128},
                      {"linear_conv_kernel_dim", 4},
                      {"full_attention_interval", 4},
                      {"rms_norm_eps", 1e-6},
                      {"tie_word_embeddings", true},
                      {"max_position_embeddings", 262144},
                      {"rope_parameters",
                       {{"rope_type", "default"},
                        {"rope_theta", 1e7},
                        {"partial_rotary_factor", 0.25}}}};
  int best = 4;
  uint64_t best_diff = UINT64_MAX;
  for (int layers = 4; layers <= 128; layers += 4) {
    c["num_hidden_layers"] = layers;
    uint64_t b = weight_bytes(c);
    uint64_t diff = b > target_bytes ? b - target_bytes : target_bytes - b;
    if (diff < best_diff)
      best_diff = diff, best = layers;
  }
  c["num_hidden_layers"] = best;
  return c;
}

nlohmann::json synthetic_config(const std::string &shape,
                                uint64_t target_bytes) {
  if (shape == "qwen35")
    return synthetic_qwen35_config(target_bytes);
  if (shape == "qwen35-1b") {
    nlohmann::json c = synthetic_qwen35_config(target_bytes);
    c["hidden_size"] = 2048;
    c["intermediate_size"] = 6144;
    c["num_hidden_layers"] = 24;
    return c;
  }
  if (shape == "qwen3-0.6b") {
    return {{"model_type", "qwen3"},
            {"architectures", {"Qwen3ForCausalLM"}},
            {"vocab_size", 151936},
            {"hidden_size", 1024},
            {"intermediate_size", 3072},
            {"num_hidden_layers", 28},
            {"num_attention_heads", 16},
            {"num_key_value_heads", 8},
            {"head_dim", 128},
            {"hidden_act", "silu"},
            {"rms_norm_eps", 1e-6},
            {"rope_theta", 1e6},
            {"tie_word_embeddings", true},
            {"max_position_embeddings", 40960}};
  }
  throw std::invalid_argument("unknown synthetic model shape '" + shape +
                              "' (qwen35, qwen35-1b, qwen3-0.6b)");
}

uint64_t write_synthetic_checkpoint(const std::string &dir,
                                    const nlohmann::json &config) {
  std::filesystem::create_directories(path_from_utf8(dir));
  std::ofstream(path_from_utf8(dir + "/config.json")) << config.dump(2);
  ModelConfig c = ModelConfig::from_hf_json(config, dir + "/config.json");
  std::map<std::string, SafetensorsSpec> specs;
  uint64_t total = 0;
  for (const auto &w : expected_weights(c, false)) {
    specs[w.name] = {"BF16", w.shape};
    uint64_t e = 1;
    for (auto d : w.shape)
      e *= static_cast<uint64_t>(d);
    total += 2 * e;
  }
  uint64_t state = 0x9E3779B97F4A7C15ull;
  write_safetensors(dir + "/model.safetensors", specs,
                    [&](const std::string &name, std::string &out) {
                      const auto &s = specs.at(name);
                      uint64_t e = 1;
                      for (auto d : s.shape)
                        e *= static_cast<uint64_t>(d);
                      out.resize(2 * e);
                      // xorshift64: bf16 values of magnitude ~0.01..0.06 with
                      // random signs (exponent byte 0x3c).
                      for (uint64_t i = 0; i < e; ++i) {
                        state ^= state << 13, state ^= state >> 7,
                            state ^= state << 17;
                        out[2 * i] = static_cast<char>(state & 0xff);
                        out[2 * i + 1] =
                            static_cast<char>(0x3c | ((state >> 8) & 0x80));
                      }
                    });
  return total;
}

} // namespace ninfer::bench
