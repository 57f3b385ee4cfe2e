// Owns the threads that walk grammars' token masks ahead of use: a bounded pool serving grammars round robin.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

namespace ninfer::constrain {

class CompiledGrammar;

// Grammars are queued by weak reference and served round robin, one walk per turn (CompiledGrammar::precompute_step),
// so a new grammar's first masks do not wait behind another grammar's whole precomputation. A grammar dropped by
// everyone else is destroyed on the worker once its turn ends; its walk in progress is abandoned at the next poll, so
// dropping one never waits for a walk. The destructor stops the workers the same way and joins them.
class MaskWorkers {
 public:
  // 0 threads: grammars are queued and never walked (tests: every mask is then walked where it is needed).
  explicit MaskWorkers(size_t threads);
  MaskWorkers(const MaskWorkers&) = delete;
  MaskWorkers& operator=(const MaskWorkers&) = delete;
  ~MaskWorkers();

  // The process's pool: kDefaultThreads threads, started on first use.
  static constexpr size_t kDefaultThreads = 1;
  static MaskWorkers& shared();

  // Queues a grammar for turns; `first`: at the head of the line (a request waits on what it prefetched). A grammar
  // must not be added again while it is queued or in a turn (CompiledGrammar keeps track).
  void add(std::weak_ptr<CompiledGrammar> grammar, bool first = false);
  // Moves a queued grammar to the head of the line (nothing when it is in a turn: that turn's grammar goes back in
  // line first when it has prefetched masks waiting).
  void promote(const std::weak_ptr<CompiledGrammar>& grammar);
  size_t threads() const { return threads_.size(); }
  // For tests: grammars queued or being walked, and the most turns ever run at once (never above threads()).
  size_t pending() const;
  size_t peak_busy() const;
  // For tests: while held, no turn starts (one in progress ends as usual); grammars queue up as before.
  void hold(bool held);

 private:
  void run(std::stop_token stop);

  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  std::deque<std::weak_ptr<CompiledGrammar>> queue_;
  size_t busy_ = 0, peak_busy_ = 0;
  bool held_ = false;
  std::vector<std::jthread> threads_;  // last: stopped and joined before the rest is destroyed
};

}  // namespace ninfer::constrain
