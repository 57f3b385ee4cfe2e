#include "engine/parallel/nccl_communicator.h"

#include <algorithm>
#include <functional>
#include <array>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/core/error.h"
#include "engine/parallel/collective_args.h"
#include "kernels/cuda_check.h"

namespace ninfer {

bool nccl_built() { return true; }

namespace {

void check_f32_rows(const char* op, const char* arg, const Tensor& t) {
  check_collective_arg(op, arg, t);
  if (t.device != Device::kCuda)
    fail(ErrorKind::kInvalidArgument, "{}: the NCCL communicator needs {} on the CUDA device, got {}", op, arg,
         t.describe());
}

// Every rank's shapes in one all_gather: rows and width of `in`, rows and width of `out`.
using GatherShape = std::array<int64_t, 4>;

}  // namespace

// Host state the ranks share: the all_gather shape exchange (a generation barrier) and the abort / re-arm protocol.
struct NcclShared {
  explicit NcclShared(int n) : size(n), shapes(static_cast<size_t>(n)), issued(static_cast<size_t>(n)) {}

  void check_usable(const char* op) {
    std::lock_guard lock(mu);
    throw_if_unusable(op);
  }

  // Publishes this rank's shapes and returns every rank's, once all have arrived.
  std::vector<GatherShape> exchange(int rank, const GatherShape& mine) {
    std::unique_lock lock(mu);
    throw_if_unusable("all_gather");
    shapes[static_cast<size_t>(rank)] = mine;
    const uint64_t gen = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      result = shapes;
      cv.notify_all();
      return result;
    }
    cv.wait(lock, [&] { return generation != gen || aborted; });
    if (generation == gen) throw_if_unusable("all_gather");
    return result;  // read under the lock: the next exchange cannot complete before this rank arrives at it
  }

  void throw_if_unusable(const char* op) const {
    if (!broken.empty()) fail(ErrorKind::kInternal, "{}: {}", op, broken);
    if (aborted) fail(ErrorKind::kInternal, "tensor-parallel group aborted: another rank failed in this step");
  }

  const int size;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  bool aborted = false;
  std::string broken;  // why the group cannot be re-armed (non-empty: every collective fails)
  std::vector<GatherShape> shapes, result;
  std::vector<std::atomic<uint64_t>> issued;  // per rank: NCCL collectives (or groups of them) enqueued
};

namespace {

class NcclRank final : public Communicator {
 public:
  NcclRank(NcclShared& s, int rank, int device, ncclComm_t comm) : s_(s), rank_(rank), device_(device), comm_(comm) {}
  int rank() const override { return rank_; }
  int size() const override { return s_.size; }

  void all_reduce_sum(const Tensor& x, Backend& backend) override {
    cuda::CudaBackend& b = cuda_of("all_reduce_sum", backend);
    check_f32_rows("all_reduce_sum", "x", x);
    s_.check_usable("all_reduce_sum");
    const int64_t R = collective_rows(x), N = x.row_size();
    float* buf = collective_packed(x) ? static_cast<float*>(x.data) : stage_in(b, x);
    NINFER_NCCL_CHECK(ncclAllReduce(buf, buf, static_cast<size_t>(R * N), ncclFloat, ncclSum, comm_, b.stream()));
    ++s_.issued[static_cast<size_t>(rank_)];
    if (buf != x.data) b.copy(collective_view(x), Tensor::make(buf, DType::kF32, {R, N}, Device::kCuda));
  }

  void all_gather(const Tensor& out, const Tensor& in, Backend& backend) override {
    cuda::CudaBackend& b = cuda_of("all_gather", backend);
    check_f32_rows("all_gather", "in", in);
    check_f32_rows("all_gather", "out", out);
    const std::vector<GatherShape> shapes =
        s_.exchange(rank_, {collective_rows(in), in.row_size(), collective_rows(out), out.row_size()});
    // Every rank checks every rank's shapes, so a bad shape fails all of them before any NCCL call.
    const int64_t R = shapes[0][0];
    int64_t width = 0;
    for (const GatherShape& sh : shapes) {
      if (sh[0] != R) fail(ErrorKind::kInvalidArgument, "all_gather: ranks bring {} and {} rows", R, sh[0]);
      width += sh[1];
    }
    for (int r = 0; r < s_.size; ++r) {
      const GatherShape& sh = shapes[static_cast<size_t>(r)];
      if (sh[2] != R || sh[3] != width)
        fail(ErrorKind::kInvalidArgument, "all_gather: out [{}, {}] of rank {} must be [{}, {}] (rows × the ranks' widths)",
             sh[2], sh[3], r, R, width);
    }
    // Rank q's block [R, n_q] sits at element R·Σ_{p<q} n_p of `target`: the staging buffer, or `out` itself when
    // it has one row (then the blocks are its columns).
    const bool direct = R == 1;
    auto* target = direct ? static_cast<float*>(out.data) : stage(b, static_cast<size_t>(R * width));
    std::vector<int64_t> offset(static_cast<size_t>(s_.size) + 1, 0);
    for (int r = 0; r < s_.size; ++r)
      offset[static_cast<size_t>(r) + 1] = offset[static_cast<size_t>(r)] + shapes[static_cast<size_t>(r)][1];
    const int64_t n = in.row_size();
    b.copy(Tensor::make(target + R * offset[static_cast<size_t>(rank_)], DType::kF32, {R, n}, Device::kCuda), collective_view(in));
    NINFER_NCCL_CHECK(ncclGroupStart());
    try {
      for (int q = 0; q < s_.size; ++q) {
        const int64_t nq = shapes[static_cast<size_t>(q)][1];
        if (nq == 0) continue;  // every rank skips the same roots: it saw the same widths
        float* block = target + R * offset[static_cast<size_t>(q)];
        NINFER_NCCL_CHECK(ncclBroadcast(block, block, static_cast<size_t>(R * nq), ncclFloat, q, comm_, b.stream()));
      }
    } catch (...) {
      (void)ncclGroupEnd();
      throw;
    }
    NINFER_NCCL_CHECK(ncclGroupEnd());
    ++s_.issued[static_cast<size_t>(rank_)];
    if (direct) return;
    for (int q = 0; q < s_.size; ++q) {
      const int64_t off = offset[static_cast<size_t>(q)], nq = shapes[static_cast<size_t>(q)][1];
      if (nq == 0) continue;
      b.copy(Tensor::strided(static_cast<float*>(out.data) + off, DType::kF32, {R, nq}, {out.row_stride(), 1},
                             Device::kCuda),
             Tensor::make(target + R * off, DType::kF32, {R, nq}, Device::kCuda));
    }
  }

  void broadcast(const Tensor& x, int root, Backend& backend) override {
    if (root < 0 || root >= s_.size)
      fail(ErrorKind::kInvalidArgument, "broadcast: root {} outside a group of {} ranks", root, s_.size);
    cuda::CudaBackend& b = cuda_of("broadcast", backend);
    check_f32_rows("broadcast", "x", x);
    s_.check_usable("broadcast");
    const int64_t R = collective_rows(x), N = x.row_size();
    float* buf = collective_packed(x) ? static_cast<float*>(x.data)
                 : rank_ == root ? stage_in(b, x)
                                 : stage(b, static_cast<size_t>(R * N));
    NINFER_NCCL_CHECK(ncclBroadcast(buf, buf, static_cast<size_t>(R * N), ncclFloat, root, comm_, b.stream()));
    ++s_.issued[static_cast<size_t>(rank_)];
    if (buf != x.data && rank_ != root) b.copy(collective_view(x), Tensor::make(buf, DType::kF32, {R, N}, Device::kCuda));
  }

 private:
  cuda::CudaBackend& cuda_of(const char* op, Backend& backend) const {
    auto* b = dynamic_cast<cuda::CudaBackend*>(&backend);
    if (!b)
      fail(ErrorKind::kInvalidArgument, "{}: NCCL rank {} needs the CUDA backend, got {}", op, rank_, backend.name());
    if (b->device_index() != device_)
      fail(ErrorKind::kInvalidArgument, "{}: NCCL rank {} is on device {} but its backend on device {}", op, rank_,
           device_, b->device_index());
    NINFER_CUDA_CHECK(cudaSetDevice(device_));  // the staging copies and NCCL's launches go to this device
    return *b;
  }
  // The contiguous staging workspace, in the backend's stream order (the next op may reuse it).
  float* stage(cuda::CudaBackend& b, size_t floats) {
    return static_cast<float*>(b.workspace("nccl.stage", std::max<size_t>(floats, 1) * sizeof(float)));
  }
  // x's rows packed into the staging workspace.
  float* stage_in(cuda::CudaBackend& b, const Tensor& x) {
    const int64_t R = collective_rows(x), N = x.row_size();
    float* buf = stage(b, static_cast<size_t>(R * N));
    b.copy(Tensor::make(buf, DType::kF32, {R, N}, Device::kCuda), collective_view(x));
    return buf;
  }

  NcclShared& s_;
  const int rank_;
  const int device_;
  const ncclComm_t comm_;
};

class NcclGroupImpl final : public NcclGroup {
 public:
  explicit NcclGroupImpl(const std::vector<int>& devices) : devices_(devices), shared_(static_cast<int>(devices.size())) {
    comms_.resize(devices.size(), nullptr);
    NINFER_NCCL_CHECK(ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data()));
    for (size_t r = 0; r < devices.size(); ++r)
      ranks_.push_back(std::make_unique<NcclRank>(shared_, static_cast<int>(r), devices[r], comms_[r]));
    int version = 0;
    (void)ncclGetVersion(&version);
    spdlog::info("NCCL {}: a group of {} rank{} on device{} {}", version, devices.size(), devices.size() == 1 ? "" : "s",
                 devices.size() == 1 ? "" : "s", fmt::join(devices, ", "));
  }

  ~NcclGroupImpl() override {
    // A broken group may have a collective waiting on the GPU for a peer that never came: abort it rather than wait.
    const bool broken = !shared_.broken.empty();
    for (ncclComm_t c : comms_) {
      if (!c) continue;
      const ncclResult_t res = broken ? ncclCommAbort(c) : ncclCommDestroy(c);
      if (res != ncclSuccess)
        spdlog::warn("NCCL: {} failed: {}", broken ? "ncclCommAbort" : "ncclCommDestroy", ncclGetErrorString(res));
    }
  }

  int size() const override { return static_cast<int>(devices_.size()); }
  int device(int rank) const override { return devices_.at(static_cast<size_t>(check(rank))); }
  Communicator& rank(int r) override { return *ranks_[static_cast<size_t>(check(r))]; }

  void abort() override {
    std::lock_guard lock(shared_.mu);
    shared_.aborted = true;
    shared_.cv.notify_all();
  }

  void reset() override {
    std::lock_guard lock(shared_.mu);
    if (shared_.aborted && shared_.broken.empty()) {
      std::vector<uint64_t> counts;
      for (const auto& c : shared_.issued) counts.push_back(c.load());
      if (std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<>()) != counts.end())
        shared_.broken = fmt::format(
            "the NCCL group is broken: a step failed after the ranks had issued {} collectives (per rank), so one may "
            "wait on the GPU forever; rebuild the group",
            fmt::join(counts, " / "));
    }
    shared_.aborted = false;
    shared_.arrived = 0;
  }

 private:
  int check(int r) const {
    if (r < 0 || r >= size()) fail(ErrorKind::kInvalidArgument, "rank {} outside a group of {} ranks", r, size());
    return r;
  }

  std::vector<int> devices_;
  NcclShared shared_;
  std::vector<ncclComm_t> comms_;
  std::vector<std::unique_ptr<NcclRank>> ranks_;
};

}  // namespace

std::unique_ptr<NcclGroup> make_nccl_group(const std::vector<int>& devices) {
  if (devices.empty()) fail(ErrorKind::kInvalidArgument, "NCCL group: no devices");
  if (std::set<int>(devices.begin(), devices.end()).size() != devices.size())
    fail(ErrorKind::kInvalidArgument, "NCCL group: devices {} list one twice (NCCL needs one GPU per rank)",
         fmt::join(devices, ", "));
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    fail(ErrorKind::kNotFound, "NCCL group: no usable CUDA device ({}: {})", cudaGetErrorName(err),
         cudaGetErrorString(err));
  }
  for (int d : devices)
    if (d < 0 || d >= count)
      fail(ErrorKind::kNotFound, "NCCL group: device {} does not exist (the CUDA runtime sees {} device{})", d, count,
           count == 1 ? "" : "s");
  return std::make_unique<NcclGroupImpl>(devices);
}

}  // namespace ninfer
