// Owns ninfer-bench-cuda's end-to-end mode: the whole forward of a model of the seed's shape (a Hugging Face
// config.json, e.g. Qwen3.5-27B), weights made on the device (no artifact file), NVFP4 W4A4 with the packer's default
// keep-bf16 policy and an int8 KV cache: prefill and batch-1 decode tok/s with either W4A4 decode kernel set and step
// graphs off and on, each next to its bytes-per-token roofline at the device copy bandwidth measured in the same run.
#pragma once

#include <string>
#include <vector>

#include "engine/backend/backend.h"

namespace ninfer::bench {

struct E2eOptions {
  std::string config = "tests/data/plan/qwen3.5-27b/config.json";  // the model's Hugging Face config.json
  int tp = 2;                  // the per-GPU shard of a TP group of this size (1: the whole model)
  std::vector<int64_t> contexts = {1024, 8192};  // decode is measured after prefilling this many tokens
  int decode_steps = 32;       // timed decode steps per measurement
  int64_t prefill_chunk = 2048;
  int device = 0;              // the device of the caller's backend (one more backend per W4A4 kernel set runs there)
};

// Makes the weights with `backend` (a CUDA one on options.device), rooflines at `copy_bandwidth` (bytes read + written per second, measured by the
// caller in the same run). Prints a Markdown table; returns a process exit code (2 when the config cannot be read).
int run_e2e_bench(const E2eOptions& options, Backend& backend, double copy_bandwidth);

}  // namespace ninfer::bench
