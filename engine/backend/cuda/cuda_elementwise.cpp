// The CUDA backend's row-wise and elementwise ops, embedding and row gather (kernels/elementwise/).
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include <cstring>

#include "engine/backend/checks/elementwise_checks.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/core/error.h"
#include "kernels/elementwise/elementwise.h"
#include "kernels/cuda_check.h"
#include "kernels/sampling/sampling.h"

namespace ninfer::cuda {

namespace {

// RoPE's inv_freq_i = f32(1 / theta^(2i / rotary_dim)), computed on the host exactly as the CPU op does, as int32 bit
// patterns for upload(). One table per (rotary_dim, theta), kept for the process: its address stays the same, so the
// staging uploads it once per step however many layers ask.
std::span<const int32_t> rope_inv_freq(int64_t rotary_dim, double theta) {
  static std::mutex mu;
  static std::map<std::pair<int64_t, double>, std::vector<int32_t>> tables;
  std::lock_guard lock(mu);
  auto [it, inserted] = tables.try_emplace({rotary_dim, theta});
  if (inserted) {
    const int64_t half = rotary_dim / 2;
    it->second.resize(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i)
      it->second[static_cast<size_t>(i)] = std::bit_cast<int32_t>(
          static_cast<float>(1.0 / std::pow(theta, double(2 * i) / double(rotary_dim))));
  }
  return it->second;
}

// Checked arguments → one row-norm launch (kernels/elementwise/norm.cu), named `op` for launch errors. z is the gate
// (kGatedRms) or the delta (kAddRms); w is absent for kL2.
void launch_norm(CudaBackend& be, const char* op, kern::NormKind kind, const Tensor& y, const Tensor& x,
                 const Tensor* z, const Tensor* w, float eps, float w_offset = 0.0f, float scale = 1.0f) {
  kern::NormArgs a;
  a.y = rows_of(y);
  a.x = rows_of(x);
  if (z != nullptr) a.z = rows_of(*z);
  if (w != nullptr) {
    a.w = w->data;
    a.w_type = ktype(w->dtype);
  }
  a.eps = eps;
  a.w_offset = w_offset;
  a.scale = scale;
  kern::row_norm(be.stream(), kind, a);
  be.after_launch(op);
}

}  // namespace

void CudaBackend::rms_norm(const Tensor& y, const Tensor& x, const Tensor& w, float eps, float w_offset) {
  check_rms_norm(y, x, w, Device::kCuda);
  launch_norm(*this, "rms_norm", kern::NormKind::kRms, y, x, nullptr, &w, eps, w_offset);
}

void CudaBackend::add_rms_norm(const Tensor& x, const Tensor& y, const Tensor& delta, const Tensor& w, float eps,
                               float w_offset) {
  check_add_rms_norm(x, y, delta, w, Device::kCuda);
  launch_norm(*this, "add_rms_norm", kern::NormKind::kAddRms, y, x, &delta, &w, eps, w_offset);
}

void CudaBackend::gated_rms_norm(const Tensor& y, const Tensor& x, const Tensor& z, const Tensor& w, float eps) {
  check_gated_rms_norm(y, x, z, w, Device::kCuda);
  launch_norm(*this, "gated_rms_norm", kern::NormKind::kGatedRms, y, x, &z, &w, eps);
}

void CudaBackend::l2_norm(const Tensor& y, const Tensor& x, float eps, float scale) {
  check_l2_norm(y, x, Device::kCuda);
  launch_norm(*this, "l2_norm", kern::NormKind::kL2, y, x, nullptr, nullptr, eps, 0.0f, scale);
}

namespace {

void binary(CudaBackend& be, const char* op, kern::PointwiseKind kind, const Tensor& y, const Tensor& a,
            const Tensor& b) {
  check_binary(op, y, a, b, Device::kCuda);
  kern::pointwise(be.stream(), kind, rows_of(y), rows_of(a), rows_of(b));
  be.after_launch(op);
}

}  // namespace

void CudaBackend::add(const Tensor& y, const Tensor& a, const Tensor& b) {
  binary(*this, "add", kern::PointwiseKind::kAdd, y, a, b);
}

void CudaBackend::silu_mul(const Tensor& y, const Tensor& gate, const Tensor& up) {
  binary(*this, "silu_mul", kern::PointwiseKind::kSiluMul, y, gate, up);
}

void CudaBackend::sigmoid_mul(const Tensor& y, const Tensor& x, const Tensor& gate) {
  binary(*this, "sigmoid_mul", kern::PointwiseKind::kSigmoidMul, y, x, gate);
}

void CudaBackend::rope(const Tensor& x, std::span<const int32_t> positions, int64_t rotary_dim, double theta) {
  check_rope(x, positions, rotary_dim, Device::kCuda);
  if (x.numel() == 0) return;
  const kern::I32Span pos = upload(positions);
  const kern::I32Span inv = upload(rope_inv_freq(rotary_dim, theta));
  kern::rope(stream(), static_cast<float*>(x.data), x.dim(0), x.dim(1), x.stride[0], x.stride[1], pos.data,
             reinterpret_cast<const float*>(inv.data), rotary_dim / 2);
  after_launch("rope");
}

namespace {

// y[r] = src[index[r]] for the checked embedding / gather_rows arguments.
void gather(CudaBackend& be, const char* op, const Tensor& y, const Tensor& src, std::span<const int32_t> index) {
  if (y.numel() == 0) return;
  const kern::I32Span dev_index = be.upload(index);
  kern::gather_rows(be.stream(), rows_of(y), rows_of(src), dev_index.data);
  be.after_launch(op);
}

}  // namespace

void CudaBackend::embedding(const Tensor& y, const Tensor& table, std::span<const int32_t> ids) {
  check_embedding(y, table, ids, Device::kCuda);
  if (table.device == Device::kCuda) return gather(*this, "embedding", y, table, ids);
  // A host-resident table (the embedding under tensor parallelism): the T rows asked for are gathered on the host,
  // uploaded in the table's dtype, and widened to f32 by the same gather kernel over rows 0..T−1.
  if (ids.empty()) return;
  if (table.dtype == DType::kNVFP4 || !table.rows_uniform())
    fail(ErrorKind::kInvalidArgument, "embedding: a host table must have plain rows, got {}", table.describe());
  const int64_t T = static_cast<int64_t>(ids.size()), H = table.dim(1);
  const size_t elem = dtype_element_bytes(table.dtype), row_bytes = static_cast<size_t>(H) * elem;
  host_rows_.resize(static_cast<size_t>(T) * row_bytes);
  const auto* base = static_cast<const uint8_t*>(table.data);
  for (int64_t t = 0; t < T; ++t)
    std::memcpy(host_rows_.data() + static_cast<size_t>(t) * row_bytes,
                base + static_cast<size_t>(ids[static_cast<size_t>(t)]) * static_cast<size_t>(table.row_stride()) * elem,
                row_bytes);
  void* rows = workspace("embedding.host_rows", host_rows_.size());
  copy(Tensor::make(rows, table.dtype, {T, H}, Device::kCuda),
       Tensor::make(host_rows_.data(), table.dtype, {T, H}, Device::kCpu));
  std::vector<int32_t> iota(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) iota[static_cast<size_t>(t)] = static_cast<int32_t>(t);
  // (A copy from pageable memory returns once the bytes are staged, so host_rows_ may be reused by the next call.)
  gather(*this, "embedding", y, Tensor::make(rows, table.dtype, {T, H}, Device::kCuda), iota);
}

void CudaBackend::gather_rows(const Tensor& y, const Tensor& x, std::span<const int32_t> rows) {
  check_gather_rows(y, x, rows, Device::kCuda);
  gather(*this, "gather_rows", y, x, rows);
}

void CudaBackend::argmax_rows(std::span<int32_t> ids, const Tensor& x) {
  check_argmax_rows(ids, x, Device::kCuda);
  if (recording_)
    fail(ErrorKind::kInvalidArgument, "argmax_rows: its answer is read back to the host, which a graph capture cannot do");
  if (ids.empty()) return;
  // R int32 come back instead of R rows of V floats (one row of a 248,320-token vocabulary is ~1 MB).
  auto* dev = static_cast<int32_t*>(workspace("argmax.ids", ids.size() * sizeof(int32_t)));
  kern::argmax_rows(stream_, rows_of(x), dev);
  after_launch("argmax_rows");
  NINFER_CUDA_CHECK(cudaMemcpyAsync(ids.data(), dev, ids.size() * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
  synchronize();
}

void CudaBackend::max_rows(const Tensor& best, const Tensor& x, bool nan_first) {
  check_max_rows(best, x, Device::kCuda);
  kern::max_rows(stream_, rows_of(x), static_cast<float*>(best.data), nan_first);
  after_launch("max_rows");
}

static_assert(kern::kTopKRowsLimit == kTopKRowsMax, "the top-k kernel's list holds kTopKRowsMax pairs");

void CudaBackend::top_k_rows(const Tensor& best, const Tensor& x) {
  check_top_k_rows(best, x, Device::kCuda);
  kern::top_k_rows(stream_, rows_of(x), static_cast<float*>(best.data), static_cast<int>(best.dim(1)));
  after_launch("top_k_rows");
}

void CudaBackend::mask_columns(const Tensor& x, const Tensor& allowed) {
  check_mask_columns(x, allowed, Device::kCuda);
  kern::mask_columns(stream_, rows_of(x), static_cast<const int8_t*>(allowed.data));
  after_launch("mask_columns");
}

void CudaBackend::edit_logits(const Tensor& x, std::span<const LogitEdit> edits) {
  check_edit_logits(x, edits, Device::kCuda);
  if (edits.empty()) return;
  // Five 32-bit words per edit (LogitEdit's layout), through the step's index staging.
  const kern::I32Span words = upload(std::span(reinterpret_cast<const int32_t*>(edits.data()), edits.size() * 5));
  kern::edit_logits(stream_, rows_of(x), words.data, static_cast<int64_t>(edits.size()));
  after_launch("edit_logits");
}

}  // namespace ninfer::cuda
