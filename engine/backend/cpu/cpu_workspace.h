// Owns the bytes of the CPU backend's own buffers for a model's largest step: the activation forms a linear call
// prepares once (W4A4 rows, W4A16 rows, packed GEMM panels, bf16 rows) and each thread's op scratch (attention tiles,
// the chunked delta rule, RoPE). The host memory plan counts them (docs/memory-plan.md); CpuBackend::workspace_bytes()
// reports what a backend holds, which the plan's tests compare with.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ninfer {

struct CpuWorkspaceShape {
  int threads = 1;              // the rank's backend threads
  int64_t rows = 0;             // rows of the largest linear call (the largest step's tokens)
  int64_t nvfp4_max_k = 0;      // widest input of the nvfp4 linears (0: none)
  bool w4a4 = true;             // nvfp4 activations quantized; false: W4A16's reordered f32 rows
  int64_t dense_max_k = 0;      // widest input of the f32 / bf16 / f16 linears (0: none)
  bool bf16_activations = false;  // --dense-activations bf16: bf16 rows (and their f32 widening without AVX512-BF16)
  int64_t head_dim = 0;         // attention (target or drafter; 0: none): head_dim and query heads per KV head
  int64_t query_group = 0;
  int64_t kv_block_size = 16;
  int64_t gdn_dk = 0, gdn_dv = 0;  // Gated DeltaNet key / value head dims (0: none)
  int64_t rotary_dim = 0;
};

struct CpuWorkspaceBytes {
  uint64_t linear = 0;          // prepared activation rows of one linear call (the largest of each kind, summed)
  uint64_t thread_scratch = 0;  // every thread's op scratch
  uint64_t total() const { return linear + thread_scratch; }
};

// An upper bound of what CpuBackend holds after running steps of `shape`: each buffer is counted at the largest
// request its kind can make (the buffers grow exactly to their largest request, resize_exact), bf16's f32 widening
// and the dense GEMM's packed panels whether or not this CPU's kernels use them.
CpuWorkspaceBytes cpu_workspace_bytes(const CpuWorkspaceShape& shape);

namespace cpu {
// Floats of one attention task's scratch (cpu_attention.cpp): the KV block's keys and values, `rows` query rows of a
// KV group's `group` heads' accumulators, maxima, sums and block scores.
size_t attention_scratch_floats(int64_t block_size, int64_t head_dim, int64_t rows, int64_t group);
// Query rows per attention task (cpu_attention.cpp).
constexpr int64_t kAttentionRowsPerTask = 64;
// Floats of one chunked delta-rule task's scratch (cpu_gdn.cpp).
size_t chunk_scratch_floats(int64_t dk, int64_t dv);
}  // namespace cpu

}  // namespace ninfer
