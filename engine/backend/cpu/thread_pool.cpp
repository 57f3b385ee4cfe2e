#include "engine/backend/cpu/thread_pool.h"

#include <chrono>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define NINFER_PAUSE() _mm_pause()
#else
#define NINFER_PAUSE() std::this_thread::yield()
#endif

namespace ninfer::cpu {

namespace {

// Spins until pred() or kSpinMicros elapsed; returns pred().
template <typename Pred>
bool spin_until(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(ThreadPool::kSpinMicros);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (pred()) return true;
      NINFER_PAUSE();
    }
    if (std::chrono::steady_clock::now() >= deadline) return pred();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) : threads_(threads < 1 ? 1 : threads), slots_(static_cast<size_t>(threads_)) {
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_tasks(int thread) {
  for (;;) {
    const int64_t task = next_.fetch_add(1, std::memory_order_relaxed);
    if (task >= n_tasks_) return;
    try {
      (*fn_)(task, thread);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
      next_.store(n_tasks_, std::memory_order_relaxed);  // stop handing out work
    }
  }
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  std::atomic<uint64_t>& slot = slots_[static_cast<size_t>(index)].state;
  for (;;) {
    if (!spin_until([&] { return generation_.load() != seen || stop_.load(); })) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = generation_.load();
    // Join job `seen` unless the caller withdrew this worker (it already handed out every task) or has moved on
    // to a newer job (the next loop turn sees that one).
    uint64_t offered = (seen << 2) | kOffered;
    if (!slot.compare_exchange_strong(offered, (seen << 2) | kJoined)) continue;
    run_tasks(index);
    slot.store((seen << 2) | kDone);
    if (caller_sleeping_.load()) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_all();
    }
  }
}

void ThreadPool::run(int64_t n, const std::function<void(int64_t, int)>& fn, bool threaded) {
  if (threaded) {
    parallel_for(n, fn);
    return;
  }
  for (int64_t i = 0; i < n; ++i) fn(i, 0);
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int)>& fn) {
  if (n <= 0) return;
  if (threads_ == 1 || n == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  fn_ = &fn;
  n_tasks_ = n;
  next_.store(0);
  error_ = nullptr;
  const uint64_t g = generation_.load() + 1;
  for (int i = 1; i < threads_; ++i) slots_[static_cast<size_t>(i)].state.store((g << 2) | kOffered);
  generation_.store(g);  // publishes fn_, n_tasks_ and the offers (seq_cst)
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
  }
  run_tasks(0);
  // Every task is handed out. Withdraw the workers that have not joined; wait for those that did (one may still
  // be running its last task).
  for (int i = 1; i < threads_; ++i) {
    std::atomic<uint64_t>& slot = slots_[static_cast<size_t>(i)].state;
    uint64_t offered = (g << 2) | kOffered;
    if (slot.compare_exchange_strong(offered, (g << 2) | kWithdrawn)) continue;
    const auto done = [&] { return slot.load() == ((g << 2) | kDone); };
    if (!spin_until(done)) {
      std::unique_lock<std::mutex> lock(mutex_);
      caller_sleeping_.store(true);
      done_.wait(lock, done);
      caller_sleeping_.store(false);
    }
  }
  fn_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

}  // namespace ninfer::cpu
