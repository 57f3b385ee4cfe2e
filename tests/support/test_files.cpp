#include "tests/support/test_files.h"

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "engine/artifact/mapped_file.h"

namespace ninfer::testing {

namespace fs = std::filesystem;

TempDir::TempDir() {
  static std::mt19937_64 rng(std::random_device{}());
  path_ = fs::temp_directory_path() / fmt::format("ninfer-test-{:016x}", rng());
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string TempDir::file(const std::string& utf8_name) const {
  return path_to_utf8(path_ / path_from_utf8(utf8_name));
}

std::string read_file(const std::string& utf8_path) {
  std::ifstream in(path_from_utf8(utf8_path), std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<nlohmann::json> read_jsonl(const std::string& utf8_path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path_from_utf8(utf8_path));
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

void write_file(const std::string& utf8_path, const std::string& bytes) {
  std::ofstream out(path_from_utf8(utf8_path), std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string random_bf16(uint64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::string out(count * 2, '\0');
  for (uint64_t i = 0; i < count; ++i) {
    float f = dist(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    uint16_t b = static_cast<uint16_t>(bits >> 16);
    out[2 * i] = static_cast<char>(b & 0xff);
    out[2 * i + 1] = static_cast<char>(b >> 8);
  }
  return out;
}

nlohmann::json tiny_qwen35_config() {
  return {{"model_type", "qwen3_5_text"},
          {"architectures", {"Qwen3_5ForCausalLM"}},
          {"vocab_size", 96},
          {"hidden_size", 32},
          {"intermediate_size", 48},
          {"num_hidden_layers", 3},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"head_dim", 16},
          {"linear_num_key_heads", 2},
          {"linear_num_value_heads", 4},
          {"linear_key_head_dim", 8},
          {"linear_value_head_dim", 8},
          {"linear_conv_kernel_dim", 4},
          {"layer_types", {"linear_attention", "linear_attention", "full_attention"}},
          {"rms_norm_eps", 1e-6},
          {"tie_word_embeddings", false},
          {"mtp_num_hidden_layers", 1},
          {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 10000000.0}, {"partial_rotary_factor", 0.25}}}};
}

std::map<std::string, StTensor> tiny_qwen35_tensors(const nlohmann::json& c, bool with_mtp, const std::string& prefix) {
  std::map<std::string, StTensor> t;
  uint32_t seed = 1;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    uint64_t n = 1;
    for (auto d : shape) n *= static_cast<uint64_t>(d);
    t[name] = StTensor{"BF16", shape, random_bf16(n, seed++)};
  };
  const int64_t h = c["hidden_size"], inter = c["intermediate_size"], v = c["vocab_size"];
  const int64_t nh = c["num_attention_heads"], kv = c["num_key_value_heads"], hd = c["head_dim"];
  const int64_t lk = c["linear_num_key_heads"], lv = c["linear_num_value_heads"];
  const int64_t lkd = c["linear_key_head_dim"], lvd = c["linear_value_head_dim"], conv = c["linear_conv_kernel_dim"];
  const int64_t key_dim = lk * lkd, value_dim = lv * lvd, conv_dim = 2 * key_dim + value_dim;
  auto full_attn = [&](const std::string& p) {
    add(p + "self_attn.q_proj.weight", {nh * hd * 2, h});
    add(p + "self_attn.k_proj.weight", {kv * hd, h});
    add(p + "self_attn.v_proj.weight", {kv * hd, h});
    add(p + "self_attn.o_proj.weight", {h, nh * hd});
    add(p + "self_attn.q_norm.weight", {hd});
    add(p + "self_attn.k_norm.weight", {hd});
  };
  auto mlp_norms = [&](const std::string& p) {
    add(p + "input_layernorm.weight", {h});
    add(p + "post_attention_layernorm.weight", {h});
    add(p + "mlp.gate_proj.weight", {inter, h});
    add(p + "mlp.up_proj.weight", {inter, h});
    add(p + "mlp.down_proj.weight", {h, inter});
  };
  add(prefix + "embed_tokens.weight", {v, h});
  add(prefix + "norm.weight", {h});
  add("lm_head.weight", {v, h});
  const auto& types = c["layer_types"];
  for (size_t i = 0; i < types.size(); ++i) {
    std::string p = fmt::format("{}layers.{}.", prefix, i);
    mlp_norms(p);
    if (types[i] == "full_attention") {
      full_attn(p);
    } else {
      add(p + "linear_attn.in_proj_qkv.weight", {conv_dim, h});
      add(p + "linear_attn.in_proj_z.weight", {value_dim, h});
      add(p + "linear_attn.in_proj_b.weight", {lv, h});
      add(p + "linear_attn.in_proj_a.weight", {lv, h});
      add(p + "linear_attn.conv1d.weight", {conv_dim, 1, conv});
      add(p + "linear_attn.dt_bias", {lv});
      add(p + "linear_attn.A_log", {lv});
      add(p + "linear_attn.norm.weight", {lvd});
      add(p + "linear_attn.out_proj.weight", {h, value_dim});
    }
  }
  if (with_mtp) {
    add("mtp.pre_fc_norm_embedding.weight", {h});
    add("mtp.pre_fc_norm_hidden.weight", {h});
    add("mtp.fc.weight", {h, 2 * h});
    mlp_norms("mtp.layers.0.");
    full_attn("mtp.layers.0.");
    add("mtp.norm.weight", {h});
  }
  return t;
}

void write_hf_dir(const fs::path& dir, const nlohmann::json& config, const std::map<std::string, StTensor>& tensors) {
  fs::create_directories(dir);
  write_file(path_to_utf8(dir / "config.json"), config.dump(2));
  write_file(path_to_utf8(dir / "model.safetensors"), make_safetensors(tensors));
  write_file(path_to_utf8(dir / "generation_config.json"), R"({"eos_token_id": [1, 2], "temperature": 0.6})");
  write_file(path_to_utf8(dir / "tokenizer_config.json"),
             R"({"chat_template": "{{ messages }}", "model_max_length": 4096})");
  write_file(path_to_utf8(dir / "tokenizer.json"), R"({"version": "1.0", "model": {"type": "BPE"}})");
}

}  // namespace ninfer::testing
