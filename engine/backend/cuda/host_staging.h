// Owns the upload of host index spans (token ids, positions, slots, q_start, block tables) for the CUDA ops: a
// pinned host buffer and a device buffer filled by bump allocation between two synchronize() calls, with repeated
// spans (the same block table for every attention layer of a step) uploaded once. A staging that records for a CUDA
// graph keeps its buffers for the graph's life and copies the graph's input spans in again before each replay.
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
  // The most bytes used between two reset() calls so far.
  size_t peak_bytes() const { return peak_; }

  // ---- recording for a CUDA graph (engine/backend/cuda/cuda_graph.cpp) ----
  // Makes this staging one that records: one buffer of `bytes`, allocated now (a capture may not allocate), that
  // never grows (an upload past it throws Error(kUnsupported)); an upload that lies inside one of `inputs` is copied
  // in again by every refresh(), any other keeps the contents it had when recorded.
  void prepare_recording(size_t bytes, std::vector<std::span<const int32_t>> inputs);
  // Copies the inputs' current contents into the pinned buffer; the recorded copies then take them to the device.
  void refresh();

 private:
  struct Entry {
    const int32_t* host;
    size_t n;
    size_t offset;  // bytes into the buffers
  };
  // Room for `bytes` more; a new buffer holds at least `at_least`.
  void reserve(size_t bytes, size_t at_least);

  uint8_t* pinned_ = nullptr;
  uint8_t* device_ = nullptr;
  size_t capacity_ = 0, used_ = 0;
  std::vector<Entry> entries_;
  size_t peak_ = 0;
  bool recording_ = false;
  std::vector<std::span<const int32_t>> inputs_;  // recording: the spans refresh() reads again
  std::vector<Entry> refreshed_;                  // recording: the uploads that lie inside them
  std::vector<std::pair<uint8_t*, uint8_t*>> retired_;  // full (pinned, device) pairs, freed by reset()
};

}  // namespace ninfer::cuda
