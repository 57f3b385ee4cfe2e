#include "engine/parallel/tp_ranks.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "engine/core/error.h"

namespace ninfer {

int tp_rank_threads(int threads, int tp) {
  const int all = threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::max(1, all / std::max(1, tp));
}

TpRanks::TpRanks(const ModelWeights& full, const ModelConfig& config, const TpSetup& setup) : group_(setup.tp) {
  if (setup.tp < 2) fail(ErrorKind::kInvalidArgument, "tensor parallelism: a group of {} ranks needs no followers", setup.tp);
  for (int r = 0; r < setup.tp; ++r) {
    const TpLayout layout = tp_layout(config, r, setup.tp);
    spdlog::info("tensor parallel {}", layout.describe());
    if (r == 0 && layout.kv_replicated)
      spdlog::info("tensor parallel: {} KV heads < {} ranks, each rank keeps a replica of the KV head its query heads "
                   "read", config.num_kv_heads, setup.tp);
    if (r == 0 && layout.gdn_k_replicated)
      spdlog::info("tensor parallel: {} GDN key heads < {} ranks, each rank keeps a replica of the key head its value "
                   "heads read", config.linear_num_key_heads, setup.tp);
    if (r == 0) continue;
    const ModelConfig rc = tp_rank_config(config, layout);
    auto f = std::make_unique<Follower>();
    f->backend = make_backend(setup.backend);
    f->model = std::make_unique<Model>(rc, shard_weights(full, config, layout), *f->backend, group_.rank(r));
    f->kv = std::make_unique<KvCache>(*f->backend, rc, setup.kv);
    f->state = std::make_unique<LinearStateCache>(*f->backend, rc, setup.state_slots, setup.state_checkpoints,
                                                  setup.state_extra_rows);
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
  group_.abort();
}

void TpRanks::follow(int rank) {
  Follower& f = *followers_[static_cast<size_t>(rank - 1)];
  uint64_t seen = 0;
  for (;;) {
    const ForwardBatch* batch = nullptr;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || job_ != seen; });
      if (stopping_) return;
      seen = job_;
      batch = batch_;
    }
    try {
      f.logits.resize(batch->logit_rows.size() * static_cast<size_t>(f.model->config().vocab_size));
      f.model->forward(*batch, *f.kv, *f.state, f.logits);
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

void TpRanks::forward(Model& leader, const ForwardBatch& batch, KvCache& kv, LinearStateCache& state,
                      std::span<float> logits, const FeatureCapture& capture) {
  {
    std::lock_guard lock(mu_);
    batch_ = &batch;
    done_ = 0;
    first_error_ = nullptr;
    ++job_;
  }
  cv_.notify_all();
  try {
    leader.forward(batch, kv, state, logits, capture);
  } catch (...) {
    failed(std::current_exception());
  }
  std::exception_ptr error;
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_ == static_cast<int>(followers_.size()); });
    batch_ = nullptr;
    error = first_error_;
    first_error_ = nullptr;
  }
  if (error) {
    group_.reset();
    std::rethrow_exception(error);
  }
}

void TpRanks::zero_state_slot(int32_t slot) {
  for (auto& f : followers_) {
    LinearStateCache& s = *f->state;
    if (slot < 0 || slot >= s.max_slots())
      fail(ErrorKind::kInvalidArgument, "tensor parallelism: state slot {} outside {} slots", slot, s.max_slots());
    for (int64_t l = 0; l < static_cast<int64_t>(f->model->config().num_linear_attention_layers()); ++l) {
      f->backend->zero(s.conv(l).slice0(slot, slot + 1));
      f->backend->zero(s.recurrent(l).slice0(slot, slot + 1));
    }
  }
}

}  // namespace ninfer
