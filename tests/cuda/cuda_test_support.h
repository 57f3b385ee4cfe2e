// Owns the CUDA op suite's harness: the CUDA backend under test (or the reason the suite is skipped), the CPU
// oracle, host <-> device tensor moves, and the comparison metrics each op states its tolerance in.
#pragma once

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/backend/backend.h"
#include "engine/backend/cuda_backend.h"
#include "engine/core/error.h"
#include "engine/parallel/nccl_communicator.h"
#include "tests/backend/test_util.h"

namespace ninfer::testing {

// The CUDA backend on device 0, created once per process; empty with `why` set when this build or machine has
// none. Tests call NINFER_REQUIRE_CUDA() first, so without a GPU they are reported as SKIPPED with the reason.
struct CudaUnderTest {
  std::unique_ptr<Backend> backend;
  std::string why;
};
inline CudaUnderTest& cuda_under_test() {
  static CudaUnderTest c = [] {
    CudaUnderTest r;
    if (!cuda_backend_built()) {
      r.why = "this build has no CUDA backend (NINFER_CUDA=OFF)";
      return r;
    }
    try {
      r.backend = make_cuda_backend({.device = 0});
    } catch (const Error& e) {
      r.why = std::string("no CUDA device: ") + e.what();
    }
    return r;
  }();
  return c;
}

#define NINFER_REQUIRE_CUDA()                                              \
  do {                                                                     \
    if (!::ninfer::testing::cuda_under_test().backend)                     \
      GTEST_SKIP() << ::ninfer::testing::cuda_under_test().why;            \
  } while (0)

// NCCL tests: a CUDA device and a build with NCCL (Windows builds have none: docs/windows.md).
#define NINFER_REQUIRE_NCCL()                                                                  \
  do {                                                                                         \
    NINFER_REQUIRE_CUDA();                                                                     \
    if (!::ninfer::nccl_built()) GTEST_SKIP() << "this build has no NCCL (NINFER_NCCL=OFF)";   \
  } while (0)

inline Backend& gpu() { return *cuda_under_test().backend; }
// The oracle every CUDA op is compared with: the CPU backend, AVX2 when available, 2 threads.
inline Backend& cpu_oracle() {
  static std::unique_ptr<Backend> b = make_cpu_backend({.threads = 2});
  return *b;
}

// A device tensor with its storage. `t` has the shape (and strides) of the host tensor it came from.
struct DeviceTensor {
  Buffer buffer;
  Tensor t;
};

// Allocates `elements` elements of `dtype` on the device and returns a view with the given shape and strides
// (row-major contiguous when strides is empty).
inline DeviceTensor device_alloc(DType dtype, std::vector<int64_t> shape, std::vector<int64_t> strides = {}) {
  DeviceTensor d;
  int64_t span = 1;
  if (strides.empty()) {
    strides.assign(shape.size(), 1);
    for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
      strides[static_cast<size_t>(i)] = strides[static_cast<size_t>(i) + 1] * shape[static_cast<size_t>(i) + 1];
  }
  for (size_t i = 0; i < shape.size(); ++i) span += (shape[i] - 1) * strides[i];
  d.buffer = gpu().alloc(static_cast<size_t>(span) * dtype_element_bytes(dtype));
  d.t.data = d.buffer.data();
  d.t.dtype = dtype;
  d.t.device = Device::kCuda;
  d.t.ndim = static_cast<int>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    d.t.shape[i] = shape[i];
    d.t.stride[i] = strides[i];
  }
  return d;
}

// A copy of a host tensor (any dtype, any uniform-row layout) on the device, contiguous.
inline DeviceTensor to_device(const Tensor& host) {
  std::vector<int64_t> shape(host.shape.begin(), host.shape.begin() + host.ndim);
  DeviceTensor d = device_alloc(host.dtype, shape);
  gpu().copy(d.t, host);
  return d;
}
inline DeviceTensor to_device(HostTensor& host) { return to_device(host.view()); }

// The device tensor's values as f32, row-major (bf16/f16 widened; int8 as its integer values).
inline std::vector<float> to_host_f32(const Tensor& dev) {
  HostTensor h(std::vector<int64_t>(dev.shape.begin(), dev.shape.begin() + dev.ndim), dev.dtype == DType::kI8 ? DType::kF32 : dev.dtype);
  if (dev.dtype == DType::kI8) {
    std::vector<int8_t> raw(static_cast<size_t>(dev.numel()));
    Tensor hv = h.view();
    hv.data = raw.data();
    hv.dtype = DType::kI8;
    gpu().copy(hv, dev);
    gpu().synchronize();
    for (size_t i = 0; i < raw.size(); ++i) h.values[i] = raw[i];
    return h.values;
  }
  gpu().copy(h.view(), dev);
  gpu().synchronize();
  h.unsync();
  return h.values;
}

// Raw bytes of a contiguous device tensor (bit-exact comparisons).
inline std::vector<uint8_t> to_host_bytes(const Tensor& dev) {
  std::vector<uint8_t> out(static_cast<size_t>(dev.numel()) * dtype_element_bytes(dev.dtype));
  Tensor hv = dev;
  hv.device = Device::kCpu;
  hv.data = out.data();
  // a contiguous host view of the same shape
  int64_t s = 1;
  for (int d = hv.ndim - 1; d >= 0; --d) {
    hv.stride[static_cast<size_t>(d)] = s;
    s *= hv.shape[static_cast<size_t>(d)];
  }
  gpu().copy(hv, dev);
  gpu().synchronize();
  return out;
}

// Normalized mean squared error Σ(a−b)² / Σb² (llama.cpp test-backend-ops' metric); 0 when both are zero.
inline double nmse(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  return den == 0.0 ? num : num / den;
}

// Element-wise |a − b| ≤ atol + rtol·|b|; reports the first few offenders.
inline ::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<float>& want, double atol,
                                            double rtol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  size_t bad = 0;
  std::string first;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(double(got[i]) - double(want[i]));
    const bool nan_mismatch = std::isnan(got[i]) != std::isnan(want[i]);
    if (nan_mismatch || d > atol + rtol * std::abs(double(want[i]))) {
      if (bad < 5) first += " [" + std::to_string(i) + "] " + std::to_string(got[i]) + " vs " + std::to_string(want[i]);
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements differ (atol " << atol << ", rtol "
                                       << rtol << "):" << first;
}

}  // namespace ninfer::testing
