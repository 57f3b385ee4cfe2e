// Owns which sequences run in each engine step: FIFO admission under max_concurrency and the KV budget,
// batched decode of every running sequence, and at most prefill_chunk prompt tokens per step (a chunk also ends
// where the prefix cache wants a state snapshot).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "engine/runtime/request.h"
#include "engine/runtime/sampling.h"

namespace ninfer {

using Clock = std::chrono::steady_clock;

// A request inside the engine.
struct Sequence {
  RequestId id = 0;
  EngineRequest request;
  std::shared_ptr<RequestObserver> observer;
  std::optional<Sampler> sampler;
  std::vector<int32_t> tokens;  // prompt, then output (sampled and forced)
  int64_t prompt_len = 0;
  int64_t computed = 0;         // tokens whose K/V and linear state are in the caches
  int64_t output_limit = 0;     // output tokens allowed: min(max_tokens, max_context − prompt)
  int64_t reserved_blocks = 0;  // KV blocks committed at admission (worst case, so decode never runs out)
  int32_t state_slot = -1;
  int64_t cached_tokens = 0;    // prompt tokens taken from the prefix cache at admission
  std::vector<int64_t> split_at;  // ascending: prefill chunks end here (the prefix cache snapshots the GDN state)
  int64_t branch_at = 0;          // where the prompt leaves an earlier prompt's cached K/V (hybrid models); 0 = none
  int64_t boundary_at = 0;      // last block boundary whose GDN state is in the sequence's boundary row; 0 = none
  bool cancelled = false;
  Clock::time_point accepted, first_scheduled, prefill_done, first_token, last_token;
  bool scheduled_once = false;
  SpecStats spec;  // speculative decoding of this sequence

  int64_t completion_tokens() const { return static_cast<int64_t>(tokens.size()) - prompt_len; }
  bool prefilling() const { return computed < prompt_len; }
};

struct SchedulerLimits {
  int32_t max_concurrency = 1;
  int64_t prefill_chunk = 2048;
  int64_t kv_blocks = 0;  // blocks in the pool
  int64_t block_size = 16;
  int32_t state_slots = 1;
};

// One sequence's share of a step: tokens [begin, end) of its token list.
struct ScheduledChunk {
  Sequence* seq = nullptr;
  int64_t begin = 0, end = 0;
};

class Scheduler {
 public:
  explicit Scheduler(const SchedulerLimits& limits) : limits_(limits) {}

  void enqueue(std::unique_ptr<Sequence> seq) { waiting_.push_back(std::move(seq)); }
  // Admits waiting sequences (FIFO; the head blocks the rest so order is kept) while concurrency, state
  // slots and the KV budget allow, then plans one step: every decoding sequence's new tokens plus up to
  // prefill_chunk prompt tokens of prefilling sequences in admission order. `admit` is called for each
  // newly admitted sequence (to take its state slot).
  //
  // `ready(seq)` is asked for each sequence whose chunk ends in a sampled row (a decode, a prompt's last chunk): false
  // when sampling it would first need long work that is being done elsewhere (its constraint's next mask, walked by a
  // mask worker). Such a sequence is passed over for this step, keeping its place and its budget share, when another
  // sequence runs in it; when none would, they are all planned (the step does the work itself: nothing else waits).
  template <typename AdmitFn, typename ReadyFn>
  std::vector<ScheduledChunk> schedule(AdmitFn&& admit, ReadyFn&& ready);

  // Removes a finished or cancelled sequence, returning it (its caches are the caller's to free).
  std::unique_ptr<Sequence> remove(RequestId id);
  Sequence* find(RequestId id);

  const std::vector<std::unique_ptr<Sequence>>& running() const { return running_; }
  const std::deque<std::unique_ptr<Sequence>>& waiting() const { return waiting_; }
  int64_t committed_blocks() const { return committed_; }
  int64_t passed_over() const { return passed_over_; }  // sequence-steps passed over since the start (`ready`)
  bool idle() const { return running_.empty() && waiting_.empty(); }
  int64_t blocks_for(int64_t tokens) const { return (tokens + limits_.block_size - 1) / limits_.block_size; }

 private:
  SchedulerLimits limits_;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;
  int64_t committed_ = 0;
  int64_t passed_over_ = 0;
};

template <typename AdmitFn, typename ReadyFn>
std::vector<ScheduledChunk> Scheduler::schedule(AdmitFn&& admit, ReadyFn&& ready) {
  while (!waiting_.empty() && static_cast<int32_t>(running_.size()) < limits_.max_concurrency &&
         static_cast<int32_t>(running_.size()) < limits_.state_slots) {
    Sequence& head = *waiting_.front();
    const int64_t need = blocks_for(head.prompt_len + head.output_limit);
    if (committed_ + need > limits_.kv_blocks) break;
    head.reserved_blocks = need;
    committed_ += need;
    admit(head);
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
  std::vector<ScheduledChunk> plan, passed;
  int64_t budget = limits_.prefill_chunk;
  for (auto& s : running_) {
    ScheduledChunk c{s.get(), s->computed, static_cast<int64_t>(s->tokens.size())};
    if (s->prefilling()) {
      if (budget <= 0) continue;
      int64_t n = std::min(budget, s->prompt_len - s->computed);
      for (int64_t at : s->split_at)
        if (at > s->computed) {
          n = std::min(n, at - s->computed);
          break;
        }
      c.end = s->computed + n;
      budget -= n;
    }
    if (c.end >= s->prompt_len && !ready(*s)) passed.push_back(c);  // it would sample, and its mask is not ready
    else plan.push_back(c);
  }
  if (plan.empty()) return passed;
  passed_over_ += static_cast<int64_t>(passed.size());
  return plan;
}

}  // namespace ninfer
