#include "engine/backend/cuda/host_staging.h"

#include <algorithm>
#include <cstring>

#include "engine/core/error.h"
#include "kernels/cuda_check.h"

namespace ninfer::cuda {

namespace {
constexpr size_t kInitialBytes = size_t{1} << 20;
constexpr size_t kAlign = 256;
constexpr size_t kRecentEntries = 32;  // how far back a repeated span is looked for
}  // namespace

HostStaging::~HostStaging() {
  reset();
  if (pinned_) (void)cudaFreeHost(pinned_);
  if (device_) (void)cudaFree(device_);
}

void HostStaging::reset() {
  peak_ = std::max(peak_, used_);
  used_ = 0;
  entries_.clear();
  for (auto [pinned, device] : retired_) {
    (void)cudaFreeHost(pinned);
    (void)cudaFree(device);
  }
  retired_.clear();
}

void HostStaging::reserve(size_t bytes, size_t at_least) {
  if (used_ + bytes <= capacity_) return;
  if (recording_)
    fail(ErrorKind::kUnsupported, "cuda graph capture: the step uploads more index data than the {} bytes reserved "
         "for it ({} used, {} more)", capacity_, used_, bytes);
  // Spans handed out since the last synchronize may still be read by queued kernels (or by an op that is still
  // uploading its other spans): keep the full buffers alive until reset() and continue in bigger new ones.
  if (pinned_) retired_.emplace_back(pinned_, device_);
  const size_t cap = std::max(at_least, std::max(bytes, capacity_ * 2));
  pinned_ = nullptr;
  device_ = nullptr;
  capacity_ = 0;
  NINFER_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&pinned_), cap, cudaHostAllocDefault));
  NINFER_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&device_), cap));
  capacity_ = cap;
  used_ = 0;
  entries_.clear();  // entries point into the retired buffers: valid, but no longer looked up
}

kern::I32Span HostStaging::upload(std::span<const int32_t> host, cudaStream_t stream) {
  if (host.empty()) return {nullptr, 0};
  const size_t bytes = host.size_bytes();
  const size_t first = entries_.size() > kRecentEntries ? entries_.size() - kRecentEntries : 0;
  for (size_t i = entries_.size(); i-- > first;) {
    const Entry& e = entries_[i];
    if (e.host == host.data() && e.n == host.size() && std::memcmp(pinned_ + e.offset, host.data(), bytes) == 0)
      return {reinterpret_cast<const int32_t*>(device_ + e.offset), static_cast<int64_t>(host.size())};
  }
  const size_t padded = (bytes + kAlign - 1) / kAlign * kAlign;
  reserve(padded, kInitialBytes);
  const size_t off = used_;
  used_ += padded;
  std::memcpy(pinned_ + off, host.data(), bytes);
  NINFER_CUDA_CHECK(cudaMemcpyAsync(device_ + off, pinned_ + off, bytes, cudaMemcpyHostToDevice, stream));
  entries_.push_back({host.data(), host.size(), off});
  if (recording_) {
    const auto inside = [&](std::span<const int32_t> in) {
      return host.data() >= in.data() && host.data() + host.size() <= in.data() + in.size();
    };
    if (std::any_of(inputs_.begin(), inputs_.end(), inside)) refreshed_.push_back(entries_.back());
  }
  return {reinterpret_cast<const int32_t*>(device_ + off), static_cast<int64_t>(host.size())};
}

void HostStaging::prepare_recording(size_t bytes, std::vector<std::span<const int32_t>> inputs) {
  if (pinned_ != nullptr || recording_)
    fail(ErrorKind::kInternal, "host staging: recording is prepared once, on a fresh staging");
  reserve((bytes + kAlign - 1) / kAlign * kAlign, 0);  // exactly this much: a graph per step shape keeps its own
  recording_ = true;
  inputs_ = std::move(inputs);
}

void HostStaging::refresh() {
  for (const Entry& e : refreshed_) std::memcpy(pinned_ + e.offset, e.host, e.n * sizeof(int32_t));
}

}  // namespace ninfer::cuda
