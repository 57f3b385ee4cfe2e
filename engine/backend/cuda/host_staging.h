// Owns the upload of host index spans (token ids, positions, slots, q_start, block tables) for the CUDA ops: a
// pinned host buffer and a device buffer filled by bump allocation between two synchronize() calls, with repeated
// spans (the same block table for every attention layer of a step) uploaded once.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "kernels/common/kview.h"

namespace ninfer::cuda {

class HostStaging {
 public:
  HostStaging() = default;
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // Copies `host` into pinned memory and enqueues its copy to the device on `stream`. When the buffers are full,
  // bigger ones take over and the full ones are kept until reset().
  kern::I32Span upload(std::span<const int32_t> host, cudaStream_t stream);
  // The stream has been synchronized: every earlier upload is consumed.
  void reset();

 private:
  struct Entry {
    const int32_t* host;
    size_t n;
    size_t offset;  // bytes into the buffers
  };
  void reserve(size_t bytes);

  uint8_t* pinned_ = nullptr;
  uint8_t* device_ = nullptr;
  size_t capacity_ = 0, used_ = 0;
  std::vector<Entry> entries_;
  std::vector<std::pair<uint8_t*, uint8_t*>> retired_;  // full (pinned, device) pairs, freed by reset()
};

}  // namespace ninfer::cuda
