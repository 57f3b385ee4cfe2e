// Owns the CPU implementation of the Backend interface (threads +
// runtime-selected SIMD kernels).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/bf16_linear.h"
#include "engine/backend/cpu/cpu_workspace.h"
#include "engine/backend/cpu/kernels.h"
#include "engine/backend/cpu/nvfp4_linear.h"
#include "engine/backend/cpu/thread_pool.h"
#include "engine/backend/op_checks.h"

namespace ninfer::cpu {

// How a dense linear is split into tasks: ranges of nb weight rows, each swept
// by the activation-row tiles of its range of tiles (every tile where the
// weight ranges alone keep the threads busy). A tile is tile_rows rows from
// row 0 whatever the split, so every output is the same.
struct GemmTasks {
  int64_t M = 0, N = 0;
  int64_t nb = 1, n_tasks = 1; // weight rows per task, weight-row ranges
  int64_t tile_rows = 1, tiles_per_task = 1, m_tasks = 1;
  int64_t count() const { return n_tasks * m_tasks; }
  // Task t's weight rows [n0, n1) and activation rows [m0, m1).
  struct Range {
    int64_t n0, n1, m0, m1;
  };
  Range range(int64_t t) const {
    const int64_t n0 = t % n_tasks * nb,
                  m0 = t / n_tasks * tiles_per_task * tile_rows;
    return {n0, std::min(N, n0 + nb), m0,
            std::min(M, m0 + tiles_per_task * tile_rows)};
  }
};

class CpuBackend final : public Backend {
public:
  explicit CpuBackend(const CpuBackendOptions &options);

  std::string name() const override;
  Device device() const override { return Device::kCpu; }
  int threads() const { return pool_.size(); }
  Nvfp4Activations nvfp4_activations() const { return nvfp4_activations_; }
  bool bf16_activations() const { return bf16_activations_; }
  const Kernels &kernels() const { return *k_; }
  // The packed NVFP4 kernels linear() uses; nullptr = the scalar reference
  // (CpuSimd::kScalar or no SIMD).
  const Nvfp4Kernels *nvfp4_kernels() const { return nvfp4_k_; }

  Buffer alloc(size_t bytes) override;
  void copy(const Tensor &dst, const Tensor &src) override;
  void zero(const Tensor &t) override;
  void synchronize() override {}

  void linear(const Tensor &y, const Tensor &x, const Tensor &w,
              bool accumulate) override;
  void embedding(const Tensor &y, const Tensor &table,
                 std::span<const int32_t> ids) override;
  void gather_rows(const Tensor &y, const Tensor &x,
                   std::span<const int32_t> rows) override;
  void argmax_rows(std::span<int32_t> ids, const Tensor &x) override;
  void top_k_rows(const Tensor &best, const Tensor &x) override;
  void max_rows(const Tensor &best, const Tensor &x, bool nan_first) override;
  void mask_columns(const Tensor &x, const Tensor &allowed) override;
  void edit_logits(const Tensor &x, std::span<const LogitEdit> edits) override;

  void rms_norm(const Tensor &y, const Tensor &x, const Tensor &w, float eps,
                float w_offset) override;
  void add_rms_norm(const Tensor &x, const Tensor &y, const Tensor &delta,
                    const Tensor &w, float eps, float w_offset) override;
  void gated_rms_norm(const Tensor &y, const Tensor &x, const Tensor &z,
                      const Tensor &w, float eps) override;
  void l2_norm(const Tensor &y, const Tensor &x, float eps,
               float scale) override;
  void add(const Tensor &y, const Tensor &a, const Tensor &b) override;
  void silu_mul(const Tensor &y, const Tensor &gate, const Tensor &up) override;
  void sigmoid_mul(const Tensor &y, const Tensor &x,
                   const Tensor &gate) override;

  void rope(const Tensor &x, std::span<const int32_t> positions,
            int64_t rotary_dim, double theta) override;

  void kv_write(const KvLayer &cache, const Tensor &k, const Tensor &v,
                std::span<const int32_t> slots) override;
  void attention(const Tensor &out, const Tensor &q, const KvLayer &cache,
                 const PagedKv &kv, float scale) override;

  void conv1d(const Tensor &out, const Tensor &x, const Tensor &w,
              const Tensor &state, const SeqBatch &batch, bool silu) override;
  void gdn_gating(const Tensor &g, const Tensor &beta, const Tensor &a,
                  const Tensor &b, const Tensor &A_log,
                  const Tensor &dt_bias) override;
  void gated_delta_rule(const Tensor &out, const Tensor &q, const Tensor &k,
                        const Tensor &v, const Tensor &g, const Tensor &beta,
                        const Tensor &state, const SeqBatch &batch,
                        DeltaRuleAlgo algo) override;

  // Per-thread scratch of at least n floats (valid until the next call with the
  // same thread index).
  float *scratch(int thread, size_t n);
  ThreadPool &pool() { return pool_; }
  // The capacity its own buffers hold now: the prepared activation rows of
  // linear calls and every thread's scratch (what cpu_workspace_bytes() plans).
  CpuWorkspaceBytes workspace_bytes() const;

private:
  void linear_nvfp4(const Tensor &y, const Tensor &x, const Tensor &w,
                    bool accumulate);
  // bf16 weights with CpuBackendOptions::bf16_activations (bf16_linear.cpp).
  void linear_bf16_activations(const Tensor &y, const Tensor &x,
                               const Tensor &w, bool accumulate);
  // f32 activations against f32 / bf16 / f16 weights (cpu_backend.cpp).
  void linear_dense(const Tensor &y, const Tensor &x, const Tensor &w,
                    bool accumulate);
  // The tasks of a dense linear of M activation rows (in tiles of tile_rows)
  // over N weight rows of `row_bytes` each (cpu_backend.cpp).
  GemmTasks gemm_tasks(int64_t M, int64_t N, int64_t row_bytes, int tile_rows,
                       bool threaded) const;

  const Kernels *k_;
  const Nvfp4Kernels *nvfp4_k_;
  Nvfp4Activations nvfp4_activations_;
  bool legacy_gemm_; // CpuBackendOptions::legacy_gemm
  bool bf16_activations_; // CpuBackendOptions::bf16_activations
  Bf16DotFn bf16_dot_;    // nullptr: no AVX512-BF16 (or CpuSimd != kAuto)
  ThreadPool pool_;
  std::vector<std::vector<float>> scratch_;
  Nvfp4A4Rows nvfp4_a4_;           // this call's quantized activations (W4A4)
  AlignedVector<float> nvfp4_a16_; // this call's reordered activations (W4A16)
  AlignedVector<float> gemm_packed_; // this call's packed activations (dense
                                     // gemm, Kernels::gemm_pack)
  Bf16Rows bf16_rows_;               // this call's bf16-rounded activations
  AlignedVector<float> bf16_widened_; // the same widened to f32 (without
                                      // AVX512-BF16)
};

// ---- helpers shared by the op files ----

// Pointer to row r (all dims but the last flattened, in order) of t.
inline char *row_ptr(const Tensor &t, int64_t r) {
  int64_t off = 0;
  for (int d = t.ndim - 2; d >= 0; --d) {
    const auto du = static_cast<size_t>(d);
    const int64_t n = t.shape[du];
    off += (r % n) * t.stride[du];
    r /= n;
  }
  return static_cast<char *>(t.data) +
         off * static_cast<int64_t>(dtype_element_bytes(t.dtype));
}
inline float *row_f32(const Tensor &t, int64_t r) {
  return reinterpret_cast<float *>(row_ptr(t, r));
}

// The shared checks (engine/backend/op_checks.h) for cpu tensors.
inline void check_cpu(const char *op, const char *arg, const Tensor &t) {
  check_on(op, arg, t, Device::kCpu);
}
inline void check_f32(const char *op, const char *arg, const Tensor &t) {
  check_f32_on(op, arg, t, Device::kCpu);
}
// f32/bf16/f16, cpu, contiguous rows (not nvfp4)
inline void check_weight(const char *op, const char *arg, const Tensor &t) {
  check_weight_on(op, arg, t, Device::kCpu);
}
inline void check_vector(const char *op, const char *arg, const Tensor &w,
                         int64_t n) {
  check_vector_on(op, arg, w, n, Device::kCpu);
}
using ninfer::check_batch;
using ninfer::check_dims;
using ninfer::check_same_shape;

} // namespace ninfer::cpu
