// Owns the per-op time profile of a backend (OpProfile) and the decorator that measures it (ProfilingBackend): every op
// forwarded to the real backend and timed, so that a benchmark can show where a prefill or decode step spends its time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/backend/backend.h"

namespace ninfer {

// Time per op label, summed over every backend that records into it (the ranks of a TP group share one). Thread-safe.
class OpProfile {
 public:
  struct Entry {
    std::string op;        // "linear nvfp4", "attention", "gated_delta_rule", ...
    uint64_t calls = 0;
    double seconds = 0;
    double flops = 0;      // linear: 2·M·N·K per call; 0 for the other ops
  };
  void add(const std::string& op, double seconds, double flops = 0);
  void clear();
  // Entries by time, largest first.
  std::vector<Entry> entries() const;
  double total_seconds() const;
  // A Markdown table: op, calls, ms, share of the ops' total, GFLOP/s where counted; then the total line.
  std::string table() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, Entry> by_op_;
};

// Runs every op on `inner` and adds its wall time to `profile`. On a device backend each op is bracketed by
// synchronize() (so the time is the op's own, and a run is slower than without the profiler); the CPU backend's ops
// are synchronous already. Op graphs are not offered (graphs_supported() is false): a replayed graph has no ops to
// time. Ops that need the concrete backend (the NCCL communicator, CUDA-only helpers) refuse it with their own error.
class ProfilingBackend final : public Backend {
 public:
  ProfilingBackend(std::unique_ptr<Backend> inner, std::shared_ptr<OpProfile> profile);

  std::string name() const override { return inner_->name() + " [op profile]"; }
  Device device() const override { return inner_->device(); }
  void bind_thread() override { inner_->bind_thread(); }
  Buffer alloc(size_t bytes) override { return inner_->alloc(bytes); }
  void copy(const Tensor& dst, const Tensor& src) override;
  void zero(const Tensor& t) override;
  void synchronize() override { inner_->synchronize(); }
  bool graphs_supported() const override { return false; }
  uint64_t memory_epoch() const override { return inner_->memory_epoch(); }

  void linear(const Tensor& y, const Tensor& x, const Tensor& w, bool accumulate = false) override;
  void embedding(const Tensor& y, const Tensor& table, std::span<const int32_t> ids) override;
  void gather_rows(const Tensor& y, const Tensor& x, std::span<const int32_t> rows) override;
  void argmax_rows(std::span<int32_t> ids, const Tensor& x) override;
  void top_k_rows(const Tensor& best, const Tensor& x) override;
  void max_rows(const Tensor& best, const Tensor& x, bool nan_first) override;
  void mask_columns(const Tensor& x, const Tensor& allowed) override;
  void edit_logits(const Tensor& x, std::span<const LogitEdit> edits) override;
  void rms_norm(const Tensor& y, const Tensor& x, const Tensor& w, float eps, float w_offset) override;
  void add_rms_norm(const Tensor& x, const Tensor& y, const Tensor& delta, const Tensor& w, float eps,
                    float w_offset) override;
  void gated_rms_norm(const Tensor& y, const Tensor& x, const Tensor& z, const Tensor& w, float eps) override;
  void l2_norm(const Tensor& y, const Tensor& x, float eps, float scale) override;
  void add(const Tensor& y, const Tensor& a, const Tensor& b) override;
  void silu_mul(const Tensor& y, const Tensor& gate, const Tensor& up) override;
  void sigmoid_mul(const Tensor& y, const Tensor& x, const Tensor& gate) override;
  void rope(const Tensor& x, std::span<const int32_t> positions, int64_t rotary_dim, double theta) override;
  void kv_write(const KvLayer& cache, const Tensor& k, const Tensor& v, std::span<const int32_t> slots) override;
  void attention(const Tensor& out, const Tensor& q, const KvLayer& cache, const PagedKv& kv, float scale) override;
  void conv1d(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& state, const SeqBatch& batch,
              bool silu) override;
  void gdn_gating(const Tensor& g, const Tensor& beta, const Tensor& a, const Tensor& b, const Tensor& A_log,
                  const Tensor& dt_bias) override;
  void gated_delta_rule(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                        const Tensor& beta, const Tensor& state, const SeqBatch& batch,
                        DeltaRuleAlgo algo = DeltaRuleAlgo::kAuto) override;

  Backend& inner() { return *inner_; }

 private:
  // Runs `op` on the inner backend and records its time under `label`.
  template <typename Op>
  void timed(const std::string& label, double flops, Op&& op);

  std::unique_ptr<Backend> inner_;
  std::shared_ptr<OpProfile> profile_;
  bool sync_;  // a device backend: synchronize around each op
};

}  // namespace ninfer
