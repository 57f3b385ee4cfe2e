// Owns the CPU backend's fixed thread pool: parallel_for over task indices, the calling thread takes part.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ninfer::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads >= 1 (the caller counts as one)
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }

  // Runs fn(task, thread) for every task in [0, n) and returns when all are done. Tasks are handed out
  // dynamically (an atomic counter); `thread` in [0, size()) identifies per-thread scratch. Not reentrant.
  // The first exception thrown by a task is rethrown here after all workers stopped.
  void parallel_for(int64_t n, const std::function<void(int64_t task, int thread)>& fn);

 private:
  void worker(int index);
  void run_tasks(int thread);

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  uint64_t generation_ = 0;
  int active_ = 0;
  bool stop_ = false;
  const std::function<void(int64_t, int)>* fn_ = nullptr;
  int64_t n_tasks_ = 0;
  std::atomic<int64_t> next_{0};
  std::exception_ptr error_;
};

}  // namespace ninfer::cpu
