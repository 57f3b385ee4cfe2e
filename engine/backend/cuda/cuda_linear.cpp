// The CUDA backend's linear op: dense f32/bf16/f16 weights and packed NVFP4 (W4A4 / W4A16) (kernels/gemm/).
#include <array>
#include <atomic>
#include <cstring>

#include "engine/artifact/dtype.h"
#include "engine/backend/checks/linear_checks.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/nvfp4_quantize.h"
#include "engine/backend/op_checks.h"
#include "engine/core/error.h"
#include "kernels/cuda_check.h"
#include "kernels/gemm/gemm.h"

namespace ninfer::cuda {

namespace {

// Multiprocessors of a device, asked once per device index.
int sm_count(int device) {
  static std::array<std::atomic<int>, 64> cache{};
  std::atomic<int>* slot = device >= 0 && device < 64 ? &cache[static_cast<size_t>(device)] : nullptr;
  if (slot && slot->load(std::memory_order_relaxed) > 0) return slot->load(std::memory_order_relaxed);
  int n = 0;
  NINFER_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
  if (slot) slot->store(n, std::memory_order_relaxed);
  return n;
}

// The device view of a checked nvfp4 weight: codes, scales and trailer through nvfp4_layout(), all in device memory.
kern::Nvfp4WeightView nvfp4_view(const Tensor& w) {
  if (reinterpret_cast<uintptr_t>(w.data) % 16 != 0)
    fail(ErrorKind::kInvalidArgument, "linear: nvfp4 weight {} must start 16-byte aligned on the device (a whole "
         "uploaded entry)", w.describe());
  const std::array<int64_t, 2> shape = {w.dim(0), w.dim(1)};
  const Nvfp4Layout layout = *nvfp4_layout(shape);
  const auto* base = static_cast<const uint8_t*>(w.data);
  kern::Nvfp4WeightView v;
  v.codes = base;
  v.scales = base + layout.scales_offset;
  v.trailer = reinterpret_cast<const float*>(base + layout.tensor_scale_offset);
  v.N = w.dim(0);
  v.K = w.dim(1);
  return v;
}

kern::LinearArgs linear_args(const Tensor& y, const Tensor& x, const LinearDims& d, bool accumulate) {
  kern::LinearArgs a;
  a.x = static_cast<const float*>(x.data);
  a.xs = x.row_stride();
  a.y = static_cast<float*>(y.data);
  a.ys = y.row_stride();
  a.M = d.M;
  a.N = d.N;
  a.K = d.K;
  a.accumulate = accumulate;
  return a;
}

// W4A4: the activation quantizer into the op's workspace, then the GEMV/GEMM, with the decode kernels of `gemv`.
void linear_w4a4_on(CudaBackend& b, const kern::LinearArgs& a, const kern::Nvfp4WeightView& v, kern::W4a4Gemv gemv) {
  void* act = b.workspace("linear.nvfp4_act", kern::nvfp4_act_bytes(a.M, a.K));
  kern::nvfp4_quantize_act(b.stream(), a.x, a.xs, a.M, a.K, v.trailer + 1, act, gemv);
  b.after_launch("linear");
  kern::linear_nvfp4_w4a4(b.stream(), a, v, act, sm_count(b.device_index()), gemv);
  b.after_launch("linear");
}

}  // namespace

void CudaBackend::linear(const Tensor& y, const Tensor& x, const Tensor& w, bool accumulate) {
  const LinearDims d = check_linear(y, x, w, Device::kCuda);
  if (d.M == 0 || d.N == 0) return;
  const kern::LinearArgs a = linear_args(y, x, d, accumulate);
  const int sms = sm_count(device_);
  if (w.dtype != DType::kNVFP4) {
    kern::linear_dense(stream_, a, w.data, ktype(w.dtype), w.row_stride(), sms);
    after_launch("linear");
    return;
  }
  const kern::Nvfp4WeightView v = nvfp4_view(w);
  if (nvfp4_activations_ == Nvfp4Activations::kFloat) {
    kern::linear_nvfp4_w4a16(stream_, a, v, sms);
    after_launch("linear");
    return;
  }
  linear_w4a4_on(*this, a, v, w4a4_gemv_);
}

void linear_w4a4(Backend& backend, const Tensor& y, const Tensor& x, const Tensor& w, bool accumulate,
                 kern::W4a4Gemv gemv) {
  auto& b = dynamic_cast<CudaBackend&>(backend);
  const LinearDims d = check_linear(y, x, w, Device::kCuda);
  if (w.dtype != DType::kNVFP4) fail(ErrorKind::kInvalidArgument, "linear_w4a4: {} is not nvfp4", w.describe());
  if (d.M == 0 || d.N == 0) return;
  linear_w4a4_on(b, linear_args(y, x, d, accumulate), nvfp4_view(w), gemv);
}

Nvfp4QuantizedRows nvfp4_quantize_rows(Backend& backend, const Tensor& x, float input_scale, kern::W4a4Gemv quantizer) {
  auto& b = dynamic_cast<CudaBackend&>(backend);
  check_f32_on("nvfp4_quantize_rows", "x", x, Device::kCuda);
  const int64_t M = x.rows(), K = x.row_size();
  if (K % 16 != 0 || !x.rows_uniform())
    fail(ErrorKind::kInvalidArgument, "nvfp4_quantize_rows: x {} needs K % 16 == 0 and equally spaced rows",
         x.describe());
  const kern::Nvfp4ActLayout L = kern::nvfp4_act_layout(K);
  auto* scale = static_cast<float*>(b.workspace("nvfp4_quantize_rows.scale", sizeof(float)));
  NINFER_CUDA_CHECK(cudaMemcpyAsync(scale, &input_scale, sizeof(float), cudaMemcpyHostToDevice, b.stream()));
  void* act = b.workspace("nvfp4_quantize_rows.act", kern::nvfp4_act_bytes(M, K));
  kern::nvfp4_quantize_act(b.stream(), static_cast<const float*>(x.data), x.row_stride(), M, K, scale, act, quantizer);
  b.after_launch("nvfp4_quantize_rows");
  std::vector<uint8_t> raw(kern::nvfp4_act_bytes(M, K));
  NINFER_CUDA_CHECK(cudaMemcpyAsync(raw.data(), act, raw.size(), cudaMemcpyDeviceToHost, b.stream()));
  b.synchronize();
  Nvfp4QuantizedRows r;
  r.codes.resize(static_cast<size_t>(M * K / 2));
  r.scales.resize(static_cast<size_t>(M * K / 16));
  r.global.resize(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m) {
    const uint8_t* row = raw.data() + m * L.row_bytes;
    std::memcpy(r.codes.data() + m * K / 2, row + L.codes, static_cast<size_t>(K / 2));
    std::memcpy(r.scales.data() + m * K / 16, row + L.scales, static_cast<size_t>(K / 16));
    std::memcpy(&r.global[static_cast<size_t>(m)], row + L.global, sizeof(float));
  }
  return r;
}

}  // namespace ninfer::cuda
