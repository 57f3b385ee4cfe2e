#include "engine/parallel/communicator.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <vector>

#include "engine/core/error.h"
#include "engine/parallel/collective_args.h"

namespace ninfer {

namespace {

class SingleRank final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_reduce_sum(const Tensor& x, Backend&) override { check_collective_arg("all_reduce_sum", "x", x); }
  void all_gather(const Tensor& out, const Tensor& in, Backend& backend) override {
    check_collective_arg("all_gather", "in", in);
    check_collective_arg("all_gather", "out", out);
    if (collective_rows(out) != collective_rows(in) || out.row_size() != in.row_size())
      fail(ErrorKind::kInvalidArgument, "all_gather: out {} is not in {} (one rank)", out.describe(), in.describe());
    backend.copy(collective_view(out), collective_view(in));
  }
  void broadcast(const Tensor& x, int root, Backend&) override {
    if (root != 0) fail(ErrorKind::kInvalidArgument, "broadcast: root {} outside a group of 1 rank", root);
  }
};

}  // namespace

Communicator& single_rank_communicator() {
  static SingleRank single;
  return single;
}

struct InProcessGroup::Shared {
  explicit Shared(int n) : size(n), input(static_cast<size_t>(n)), shape(static_cast<size_t>(n)) {}

  // Waits until every rank has arrived (a generation barrier); throws on every rank once the group is aborted.
  void barrier() {
    std::unique_lock lock(mu);
    if (aborted) fail(ErrorKind::kInternal, "tensor-parallel group aborted: another rank failed in this step");
    const uint64_t gen = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return;
    }
    cv.wait(lock, [&] { return generation != gen || aborted; });
    if (generation == gen) fail(ErrorKind::kInternal, "tensor-parallel group aborted: another rank failed in this step");
  }

  const int size;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  bool aborted = false;
  std::vector<std::vector<float>> input;            // per rank: its packed input of the current collective
  std::vector<std::pair<int64_t, int64_t>> shape;   // per rank: rows, row size of that input
};

namespace {

class InProcessRank final : public Communicator {
 public:
  InProcessRank(InProcessGroup::Shared& s, int rank) : s_(s), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return s_.size; }

  void all_reduce_sum(const Tensor& x, Backend& backend) override {
    check_collective_arg("all_reduce_sum", "x", x);
    publish(x, backend);
    s_.barrier();
    check_same_shapes("all_reduce_sum");
    const size_t n = s_.input[0].size();
    result_.assign(s_.input[0].begin(), s_.input[0].end());
    for (int r = 1; r < s_.size; ++r) {
      const float* in = s_.input[static_cast<size_t>(r)].data();
      for (size_t i = 0; i < n; ++i) result_[i] += in[i];
    }
    s_.barrier();  // every rank has read every input: they may be reused
    unpack_rows_from_host(x, result_.data(), backend);
  }

  void all_gather(const Tensor& out, const Tensor& in, Backend& backend) override {
    check_collective_arg("all_gather", "in", in);
    check_collective_arg("all_gather", "out", out);
    publish(in, backend);
    s_.barrier();
    const int64_t R = s_.shape[0].first;
    int64_t width = 0;
    for (const auto& [rows, n] : s_.shape) {
      if (rows != R) fail(ErrorKind::kInvalidArgument, "all_gather: ranks bring {} and {} rows", R, rows);
      width += n;
    }
    if (collective_rows(out) != R || out.row_size() != width)
      fail(ErrorKind::kInvalidArgument, "all_gather: out {} must be [{}, {}] (rows × the ranks' widths)", out.describe(), R,
           width);
    result_.resize(static_cast<size_t>(R * width));
    int64_t col = 0;
    for (int r = 0; r < s_.size; ++r) {
      const int64_t n = s_.shape[static_cast<size_t>(r)].second;
      const float* src = s_.input[static_cast<size_t>(r)].data();
      for (int64_t row = 0; row < R; ++row)
        std::memcpy(result_.data() + row * width + col, src + row * n, static_cast<size_t>(n) * 4);
      col += n;
    }
    s_.barrier();
    unpack_rows_from_host(out, result_.data(), backend);
  }

  void broadcast(const Tensor& x, int root, Backend& backend) override {
    if (root < 0 || root >= s_.size)
      fail(ErrorKind::kInvalidArgument, "broadcast: root {} outside a group of {} ranks", root, s_.size);
    check_collective_arg("broadcast", "x", x);
    publish(x, backend);
    s_.barrier();
    check_same_shapes("broadcast");
    if (rank_ != root) result_ = s_.input[static_cast<size_t>(root)];
    s_.barrier();
    if (rank_ != root) unpack_rows_from_host(x, result_.data(), backend);
  }

 private:
  void publish(const Tensor& t, Backend& backend) {
    pack_rows_to_host(s_.input[static_cast<size_t>(rank_)], t, backend);
    s_.shape[static_cast<size_t>(rank_)] = {collective_rows(t), t.row_size()};
  }
  void check_same_shapes(const char* op) const {
    for (int r = 1; r < s_.size; ++r)
      if (s_.shape[static_cast<size_t>(r)] != s_.shape[0])
        fail(ErrorKind::kInvalidArgument, "{}: rank {} brings [{}, {}] but rank 0 [{}, {}]", op, r,
             s_.shape[static_cast<size_t>(r)].first, s_.shape[static_cast<size_t>(r)].second, s_.shape[0].first,
             s_.shape[0].second);
  }

  InProcessGroup::Shared& s_;
  const int rank_;
  std::vector<float> result_;
};

}  // namespace

InProcessGroup::InProcessGroup(int size) {
  if (size < 1) fail(ErrorKind::kInvalidArgument, "in-process group of {} ranks", size);
  shared_ = std::make_unique<Shared>(size);
  for (int r = 0; r < size; ++r) ranks_.push_back(std::make_unique<InProcessRank>(*shared_, r));
}

InProcessGroup::~InProcessGroup() = default;

int InProcessGroup::size() const { return shared_->size; }

Communicator& InProcessGroup::rank(int r) {
  if (r < 0 || r >= size()) fail(ErrorKind::kInvalidArgument, "rank {} outside a group of {} ranks", r, size());
  return *ranks_[static_cast<size_t>(r)];
}

void InProcessGroup::abort() {
  std::lock_guard lock(shared_->mu);
  shared_->aborted = true;
  shared_->cv.notify_all();
}

void InProcessGroup::reset() {
  std::lock_guard lock(shared_->mu);
  shared_->aborted = false;
  shared_->arrived = 0;
}

}  // namespace ninfer
