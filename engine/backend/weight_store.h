// Owns the copies of read-only weights a device backend computes from: each host tensor (an mmap'd artifact view)
// is uploaded once and kept for the store's lifetime; on the CPU backend the host view is used as it is (zero-copy).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/core/progress.h"

namespace ninfer {

class WeightStore {
 public:
  explicit WeightStore(Backend& backend) : backend_(backend) {}

  // The tensor as the backend's ops read it: the same view on the CPU backend; elsewhere a device copy with the same
  // shape (contiguous). An nvfp4 tensor is copied whole (codes, block scales and the trailer, docs/nvfp4.md; binding
  // checked its scales). `name` is for errors. An empty (null) view stays empty.
  Tensor place(const Tensor& host, const std::string& name);
  // Bytes copied to the device so far (0 on the CPU backend).
  uint64_t device_bytes() const { return device_bytes_; }
  bool on_device() const { return backend_.device() != Device::kCpu; }
  Backend& backend() { return backend_; }

 private:
  Backend& backend_;
  struct Placed {
    void* data;
    uint64_t bytes;
  };
  std::vector<Buffer> buffers_;
  std::unordered_map<const void*, Placed> placed_;  // host storage -> its device copy
  uint64_t device_bytes_ = 0;
};

// Bytes a tensor view spans in memory (an nvfp4 entry: codes + scales + trailer).
uint64_t tensor_storage_bytes(const Tensor& t);

// A weight struct with every tensor placed by `store` (for_each_tensor(W&, fn) lists them; see model_weights.h), with
// a progress bar labelled `what` while a device backend uploads.
template <typename W>
W placed(W weights, WeightStore& store, const std::string& what) {
  if (!store.on_device()) return weights;
  uint64_t total = 0;
  for_each_tensor(weights, [&](Tensor& t) {
    if (t.data) total += tensor_storage_bytes(t);
  });
  ProgressBar bar("upload " + what, total);
  for_each_tensor(weights, [&](Tensor& t) {
    if (!t.data) return;
    const uint64_t bytes = tensor_storage_bytes(t);
    t = store.place(t, what);
    bar.advance(bytes);
  });
  store.backend().synchronize();
  bar.finish();
  return weights;
}

}  // namespace ninfer
