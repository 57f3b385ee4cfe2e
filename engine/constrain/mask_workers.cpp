#include "engine/constrain/mask_workers.h"

#include <algorithm>

#include "engine/constrain/grammar_constraint.h"

namespace ninfer::constrain {

MaskWorkers::MaskWorkers(size_t threads) {
  for (size_t i = 0; i < threads; ++i)
    threads_.emplace_back([this](std::stop_token stop) { run(stop); });
}

MaskWorkers::~MaskWorkers() {
  for (auto& t : threads_) t.request_stop();
  wake_.notify_all();
  threads_.clear();  // joins
}

MaskWorkers& MaskWorkers::shared() {
  static MaskWorkers workers(kDefaultThreads);
  return workers;
}

void MaskWorkers::add(std::weak_ptr<CompiledGrammar> grammar, bool first) {
  {
    std::lock_guard lock(mu_);
    if (first) queue_.push_front(std::move(grammar));
    else queue_.push_back(std::move(grammar));
  }
  wake_.notify_one();
}

void MaskWorkers::promote(const std::weak_ptr<CompiledGrammar>& grammar) {
  std::lock_guard lock(mu_);
  for (auto it = queue_.begin(); it != queue_.end(); ++it)
    if (!it->owner_before(grammar) && !grammar.owner_before(*it)) {  // the same grammar
      std::weak_ptr<CompiledGrammar> g = std::move(*it);
      queue_.erase(it);
      queue_.push_front(std::move(g));
      return;
    }
}

size_t MaskWorkers::pending() const {
  std::lock_guard lock(mu_);
  return queue_.size() + busy_;
}

size_t MaskWorkers::peak_busy() const {
  std::lock_guard lock(mu_);
  return peak_busy_;
}

void MaskWorkers::hold(bool held) {
  {
    std::lock_guard lock(mu_);
    held_ = held;
  }
  wake_.notify_all();
}

void MaskWorkers::run(std::stop_token stop) {
  for (;;) {
    std::weak_ptr<CompiledGrammar> turn;
    {
      std::unique_lock lock(mu_);
      if (!wake_.wait(lock, stop, [&] { return !held_ && !queue_.empty(); })) return;  // stopped
      turn = std::move(queue_.front());
      queue_.pop_front();
      ++busy_;
      peak_busy_ = std::max(peak_busy_, busy_);
    }
    bool more = false, first = false;
    if (std::shared_ptr<CompiledGrammar> g = turn.lock()) {
      // Abandoned mid-walk when the pool stops or when this turn holds the last reference (nobody needs the masks;
      // only weak references are handed out besides, so once the count is 1 it stays 1).
      more = g->precompute_step([&] { return stop.stop_requested() || g.use_count() == 1; });
      first = more && g->masks().wanted();
    }  // a grammar dropped meanwhile is destroyed here, on the worker
    std::lock_guard lock(mu_);
    --busy_;
    if (more && !stop.stop_requested()) {
      if (first) queue_.push_front(std::move(turn));
      else queue_.push_back(std::move(turn));
    }
  }
}

}  // namespace ninfer::constrain
