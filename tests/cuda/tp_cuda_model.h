// Owns the CUDA tensor-parallel comparison: one artifact at TP N on CUDA ranks (tests/parallel/tp_model.h: TpRanks on
// the given devices, NCCL when they are distinct, host memory when ranks share a GPU) against TP1 on GPU 0.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/artifact/artifact.h"

namespace ninfer::testing {

// Every step's logits of a prefill (whole, then in chunks of 7) and of 12 greedy decode steps (TP1's tokens fed to
// both) within the CUDA e2e tests' max|a − b| / max|b| <= 2e-3, with TP1's greedy tokens (gtest expectations).
void expect_cuda_tp_equals_tp1(const Artifact& artifact, const std::vector<int>& devices,
                               const std::vector<int32_t>& prompt);

}  // namespace ninfer::testing
