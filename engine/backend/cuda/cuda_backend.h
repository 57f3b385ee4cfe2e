// Owns the CUDA implementation of the Backend interface: one device, one stream, the caching device arena, the
// pinned staging of host index spans, and the glue from each op's checked arguments to its kernel family in kernels/.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/device_arena.h"
#include "engine/backend/cuda/host_staging.h"
#include "engine/backend/cuda_backend.h"
#include "kernels/common/kview.h"
#include "kernels/gemm/gemm.h"

namespace ninfer::cuda {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const CudaBackendOptions& options);
  ~CudaBackend() override;

  std::string name() const override;
  Device device() const override { return Device::kCuda; }
  void bind_thread() override;
  int device_index() const { return device_; }
  int compute_capability() const { return cc_major_ * 10 + cc_minor_; }  // 70 = V100, 90 = H100/H200
  cudaStream_t stream() const { return stream_; }
  Nvfp4Activations nvfp4_activations() const { return nvfp4_activations_; }
  const DeviceArena& arena() const { return *arena_; }

  Buffer alloc(size_t bytes) override;
  void copy(const Tensor& dst, const Tensor& src) override;
  void zero(const Tensor& t) override;
  void synchronize() override;

  // Op graphs (engine/backend/cuda/cuda_graph.cpp): stream capture into a CUDA graph.
  bool graphs_supported() const override { return !sync_every_op_; }
  void begin_graph_capture(std::vector<std::span<const int32_t>> inputs) override;
  std::unique_ptr<OpGraph> end_graph_capture() override;
  void abort_graph_capture() override;
  uint64_t memory_epoch() const override { return memory_epoch_; }

  void linear(const Tensor& y, const Tensor& x, const Tensor& w, bool accumulate) override;
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
                        const Tensor& beta, const Tensor& state, const SeqBatch& batch, DeltaRuleAlgo algo) override;

  // ---- for the op files (engine/backend/cuda/cuda_*.cpp) ----
  // A host index span on the device, valid until the next synchronize(); the same span (pointer, length and
  // contents) asked again before then is not uploaded again.
  kern::I32Span upload(std::span<const int32_t> host) { return (recording_ ? *recording_ : staging_).upload(host, stream_); }
  // Named grow-only device scratch for an op's temporaries (quantized activations, split-K partials). Ops run in
  // stream order, so one op's workspace may be reused by the next; the pointer is valid until the next call
  // with the same name asks for more bytes.
  void* workspace(const char* name, size_t bytes);
  // Call after every kernel launch: checks the launch (and, with sync_every_op, the execution) and names `op`.
  void after_launch(const char* op);
  // Where kernels record a data fault (kernels/common/fault.cuh): host-mapped memory, checked at synchronize().
  kern::DeviceFault* fault_slot() const { return fault_device_; }

 private:
  int device_ = 0;
  int cc_major_ = 0, cc_minor_ = 0;
  std::string device_name_;
  cudaStream_t stream_ = nullptr;
  Nvfp4Activations nvfp4_activations_;
  kern::W4a4Gemv w4a4_gemv_;  // the W4A4 decode kernels linear() runs
  bool sync_every_op_ = false;
  std::shared_ptr<DeviceArena> arena_;
  HostStaging staging_;
  std::unique_ptr<HostStaging> recording_;  // during a graph capture: the staging the graph will own
  uint64_t memory_epoch_ = 0;
  std::map<std::string, Buffer, std::less<>> workspaces_;
  std::vector<uint8_t> host_rows_;  // embedding rows gathered from a host table
  kern::DeviceFault* fault_host_ = nullptr;    // pinned, mapped
  kern::DeviceFault* fault_device_ = nullptr;  // the same memory as the kernels see it
  void raise_fault();                          // throws the recorded fault, if any, and clears it
};

// Kernel views of checked tensors (engine/backend/cuda/kernel_views.cpp).
kern::KType ktype(DType dtype);
// t as rows of its last dimension (up to 3 leading dims, any strides).
kern::Rows rows_of(const Tensor& t);

}  // namespace ninfer::cuda
