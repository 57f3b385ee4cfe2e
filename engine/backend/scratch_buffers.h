// Owns named, reusable activation buffers on a backend (grown on demand), for forwards that run every step: the
// model's, the drafters'.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>

#include "engine/backend/backend.h"

namespace ninfer {

class ScratchBuffers {
 public:
  explicit ScratchBuffers(Backend& backend) : backend_(backend) {}

  // A contiguous f32 tensor of `shape` in the buffer called `name`; the buffer grows (with headroom, so slowly
  // growing batches reallocate rarely) and is reused by later calls with the same name.
  Tensor get(const std::string& name, std::initializer_list<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    Buffer& b = buffers_[name];
    if (b.bytes < bytes) {
      b = backend_.alloc(bytes + bytes / 2);
      ++epoch_;
    }
    return Tensor::make(b.data(), DType::kF32, shape, backend_.device());
  }
  // Bytes of every buffer now (what the memory plans count as activations).
  uint64_t bytes() const {
    uint64_t n = 0;
    for (const auto& [name, b] : buffers_) n += b.bytes;
    return n;
  }
  // Changes whenever a buffer was replaced by a bigger one (op graphs recorded before point at the old one).
  uint64_t epoch() const { return epoch_; }

 private:
  Backend& backend_;
  std::map<std::string, Buffer> buffers_;
  uint64_t epoch_ = 0;
};

}  // namespace ninfer
