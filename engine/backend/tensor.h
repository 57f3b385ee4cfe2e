// Owns the non-owning tensor view every backend op takes (dtype, shape, element strides, data pointer, device).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "engine/artifact/dtype.h"

namespace ninfer {

enum class Device : uint8_t { kCpu, kCuda };

// A view of up to 4 dimensions. Strides are in elements; the last dimension is always contiguous (stride 1) for
// every op, the leading ones may be padded or interleaved (e.g. the query half of a per-head [query | gate] row).
// The view never owns memory: weights point into the mmap'd artifact, activations into a Backend buffer.
struct Tensor {
  static constexpr int kMaxDims = 4;

  void* data = nullptr;
  DType dtype = DType::kF32;
  Device device = Device::kCpu;
  int ndim = 0;
  std::array<int64_t, kMaxDims> shape{1, 1, 1, 1};
  std::array<int64_t, kMaxDims> stride{0, 0, 0, 0};

  // A contiguous row-major view.
  static Tensor make(void* data, DType dtype, std::initializer_list<int64_t> shape, Device device = Device::kCpu);
  static Tensor make(void* data, DType dtype, std::span<const int64_t> shape, Device device = Device::kCpu);
  // Same storage, explicit strides (elements).
  static Tensor strided(void* data, DType dtype, std::initializer_list<int64_t> shape,
                        std::initializer_list<int64_t> stride, Device device = Device::kCpu);

  int64_t dim(int i) const { return shape[static_cast<size_t>(i)]; }
  int64_t numel() const;
  // Rows = product of all dimensions but the last; row_size = the last dimension.
  int64_t rows() const { return numel() / (ndim > 0 ? shape[static_cast<size_t>(ndim - 1)] : 1); }
  int64_t row_size() const { return ndim > 0 ? shape[static_cast<size_t>(ndim - 1)] : 1; }
  bool is_contiguous() const;
  // True when the leading dimensions collapse to one row stride (rows are equally spaced): stride[d] =
  // stride[d+1] * shape[d+1] for every leading pair.
  bool rows_uniform() const;
  // Element stride between consecutive rows; valid when rows_uniform().
  int64_t row_stride() const { return ndim >= 2 ? stride[static_cast<size_t>(ndim - 2)] : row_size(); }

  // A view of rows [begin, end) of dimension 0.
  Tensor slice0(int64_t begin, int64_t end) const;
  // Same storage with another shape; requires a contiguous tensor.
  Tensor reshape(std::initializer_list<int64_t> shape) const;
  // Element pointer at the given leading indices (missing ones are 0).
  void* at(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) const;

  // "bf16[4,8,16] strides[128,16,1] cpu" for error messages.
  std::string describe() const;
};

}  // namespace ninfer
