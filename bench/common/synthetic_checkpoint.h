// Owns generating a synthetic Qwen3.5-shaped bf16 Hugging Face checkpoint of a chosen size (benchmarks).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace ninfer::bench {

// A Qwen3.5-0.8B-like text config (hidden 1024, 8/2 heads of 256, GDN 16/16 heads of 128, every 4th
// layer full attention) with as many layers as bring the bf16 weights closest to `target_bytes`.
nlohmann::json synthetic_qwen35_config(uint64_t target_bytes);

// Writes config.json + model.safetensors (pseudo-random bf16) into `dir`; returns the tensor bytes.
uint64_t write_synthetic_checkpoint(const std::string& dir, const nlohmann::json& config);

}  // namespace ninfer::bench
