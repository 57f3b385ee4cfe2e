#include "engine/parallel/tp_ranks.h"

#include <algorithm>
#include <set>

#include <fmt/ranges.h>

#include <spdlog/spdlog.h>

#include "engine/core/error.h"
#include "engine/parallel/nccl_communicator.h"
#include "engine/parallel/rank_drafters.h"
#include "engine/parallel/rank_replica.h"

namespace ninfer {

int tp_rank_threads(int threads, int tp) {
  const int all = threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::max(1, all / std::max(1, tp));
}

namespace {

// The collectives of `setup`'s ranks: NCCL over distinct CUDA devices, else through host memory.
std::unique_ptr<CommunicatorGroup> make_group(const TpSetup& setup) {
  if (setup.backend.kind != BackendKind::kCuda) return std::make_unique<InProcessGroup>(setup.tp);
  if (static_cast<int>(setup.devices.size()) != setup.tp)
    fail(ErrorKind::kInvalidArgument, "tensor parallelism: {} CUDA devices for {} ranks", setup.devices.size(), setup.tp);
  const std::set<int> distinct(setup.devices.begin(), setup.devices.end());
  if (static_cast<int>(distinct.size()) == setup.tp) {
    spdlog::info("tensor parallelism: NCCL over devices {}", fmt::join(setup.devices, ","));
    return make_nccl_group(setup.devices);
  }
  spdlog::warn("tensor parallelism: ranks share CUDA devices ({}): their collectives go through host memory, a test "
               "setup, not a fast one", fmt::join(setup.devices, ","));
  return std::make_unique<InProcessGroup>(setup.tp);
}

}  // namespace

TpRanks::TpRanks(const ModelWeights& full, const ModelConfig& config, const TpSetup& setup) : group_(make_group(setup)) {
  if (setup.tp < 2) fail(ErrorKind::kInvalidArgument, "tensor parallelism: a group of {} ranks needs no followers", setup.tp);
  log_tp_layouts(config, setup.tp);
  for (int r = 1; r < setup.tp; ++r) {
    auto f = std::make_unique<Follower>();
    BackendSelection selection = setup.backend;
    if (selection.kind == BackendKind::kCuda) selection.device = setup.devices[static_cast<size_t>(r)];
    f->replica = std::make_unique<RankReplica>(full, config, r, setup, make_backend(selection), group_->rank(r));
    followers_.push_back(std::move(f));
  }
  for (int r = 1; r < setup.tp; ++r) followers_[static_cast<size_t>(r - 1)]->thread = std::thread([this, r] { follow(r); });
}

TpRanks::~TpRanks() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& f : followers_)
    if (f->thread.joinable()) f->thread.join();
}

void TpRanks::failed(std::exception_ptr e) {
  {
    std::lock_guard lock(mu_);
    if (!first_error_) first_error_ = e;
  }
  group_->abort();
}

void TpRanks::follow(int rank) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* work = nullptr;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || job_ != seen; });
      if (stopping_) return;
      seen = job_;
      work = work_;
    }
    try {
      (*work)(rank);
    } catch (...) {
      failed(std::current_exception());
    }
    {
      std::lock_guard lock(mu_);
      ++done_;
    }
    cv_.notify_all();
  }
}

void TpRanks::run(const std::function<void(int rank)>& job) {
  {
    std::lock_guard lock(mu_);
    work_ = &job;
    done_ = 0;
    first_error_ = nullptr;
    ++job_;
  }
  cv_.notify_all();
  try {
    job(0);
  } catch (...) {
    failed(std::current_exception());
  }
  std::exception_ptr error;
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_ == static_cast<int>(followers_.size()); });
    work_ = nullptr;
    error = first_error_;
    first_error_ = nullptr;
  }
  if (error) {
    group_->reset();
    std::rethrow_exception(error);
  }
}

void TpRanks::forward(Model& leader, const ForwardBatch& batch, KvCache& kv, LinearStateCache& state,
                      const LogitsOut& logits, const FeatureCapture& capture) {
  run([&](int rank) {
    if (rank == 0) return leader.forward(batch, kv, state, logits, capture);
    followers_[static_cast<size_t>(rank - 1)]->replica->forward(batch, LogitsForm::of(logits), logits.edits);
  });
}

void TpRanks::mirror_state(LinearStateCache& leader) {
  for (auto& f : followers_) leader.mirror_to(*f->replica->state);
}

std::unique_ptr<Drafter> TpRanks::sharded_drafter(const DrafterFactory& factory, WeightStore& leader_weights,
                                                 const DrafterLimits& limits) {
  if (!factory.shard) return nullptr;
  std::vector<std::unique_ptr<Drafter>> shares(static_cast<size_t>(size()));
  run([&](int rank) {
    WeightStore& store = rank == 0 ? leader_weights : *followers_[static_cast<size_t>(rank - 1)]->replica->weights;
    shares[static_cast<size_t>(rank)] = factory.shard(store, limits, {.rank = rank, .size = size(), .comm = &communicator(rank)});
  });
  return std::make_unique<RankDrafters>(*this, std::move(shares));
}

Model& TpRanks::model(int rank) { return *followers_.at(static_cast<size_t>(rank - 1))->replica->model; }

KvCache& TpRanks::kv(int rank) { return *followers_.at(static_cast<size_t>(rank - 1))->replica->kv; }

LinearStateCache& TpRanks::state(int rank) { return *followers_.at(static_cast<size_t>(rank - 1))->replica->state; }

}  // namespace ninfer
