// Owns the CPU backend's fixed thread pool: parallel_for over task indices, the calling thread takes part.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ninfer::cpu {

// Workers spin for a short while (kSpinMicros) after each job before sleeping on a condition variable, so the
// back-to-back small ops of a decode step do not pay a futex wake-up each. A job does not wait for workers that
// have not started it: once the caller has handed out the last task it withdraws every worker that has not yet
// joined (a preempted or still waking thread), so a job costs what its tasks cost, not a scheduler time slice.
class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads >= 1 (the caller counts as one)
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }

  // Runs fn(task, thread) for every task in [0, n) and returns when all are done. Tasks are handed out
  // dynamically (an atomic counter); `thread` in [0, size()) identifies per-thread scratch. Not reentrant, one
  // caller at a time. The first exception thrown by a task is rethrown here after all workers stopped.
  void parallel_for(int64_t n, const std::function<void(int64_t task, int thread)>& fn);

  // parallel_for when `threaded`, else every task in order on the calling thread (thread index 0): the ops decide
  // by their size whether waking the workers pays.
  void run(int64_t n, const std::function<void(int64_t task, int thread)>& fn, bool threaded);

  static constexpr int kSpinMicros = 50;

 private:
  void worker(int index);
  void run_tasks(int thread);

  // A worker's part in job g: (g << 2) | state. The caller offers it (kOffered) before publishing g; the worker
  // takes it (kJoined) or the caller withdraws it (kWithdrawn), whichever CAS comes first; kDone after the worker's
  // last task.
  enum : uint64_t { kOffered = 0, kJoined = 1, kWithdrawn = 2, kDone = 3 };
  struct alignas(64) Slot {
    std::atomic<uint64_t> state{0};
  };

  int threads_;
  std::vector<std::thread> workers_;
  std::vector<Slot> slots_;  // [threads_], index 0 (the caller) unused
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  const std::function<void(int64_t, int)>* fn_ = nullptr;
  int64_t n_tasks_ = 0;
  std::atomic<int64_t> next_{0};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace ninfer::cpu
