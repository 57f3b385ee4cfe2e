// Owns generating a synthetic Qwen3.5-shaped bf16 Hugging Face checkpoint of a
// chosen size (benchmarks).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace ninfer::bench {

// A Qwen3.5-0.8B-like text config (hidden 1024, 8/2 heads of 256, GDN 16/16
// heads of 128, every 4th layer full attention) with as many layers as bring
// the bf16 weights closest to `target_bytes`.
nlohmann::json synthetic_qwen35_config(uint64_t target_bytes);

// The benchmarks' named shapes (`--shape`):
//   qwen35      synthetic_qwen35_config(target_bytes)
//   qwen35-1b   issue 23's ~1B hybrid: hidden 2048, 24 layers (18 GDN + 6
//   attention), 8/2 heads of 256, GDN 16/16
//               heads of 128, intermediate 6144, vocab 151936, tied (1.37B
//               parameters besides the 0.31B embedding)
//   qwen3-0.6b  Qwen3-0.6B's published config (dense: hidden 1024, 28 layers,
//   16/8 heads of 128, intermediate 3072,
//               vocab 151936, tied)
// target_bytes only sizes `qwen35`. An unknown name throws
// std::invalid_argument listing the known ones.
nlohmann::json synthetic_config(const std::string &shape,
                                uint64_t target_bytes);

// Writes config.json + model.safetensors (pseudo-random bf16) into `dir`;
// returns the tensor bytes.
uint64_t write_synthetic_checkpoint(const std::string &dir,
                                    const nlohmann::json &config);

} // namespace ninfer::bench
