// Owns the per-request hand-off between the engine (GenerationSink calls of each of a request's n choices) and the
// HTTP thread that waits.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "server/engine_port.h"
#include "server/metrics.h"

namespace ninfer::server {

// One output event of a request: which choice (0..n−1) and what it brought.
struct ChoiceDelta {
  int index = 0;
  Delta delta;
};

struct ChoiceFinal {
  int index = 0;
  FinalResult result;
};

// The engine side never blocks: the choices' sinks append under a short lock and notify. The finish hook (JSONL line,
// metrics) runs once per HTTP request, on the engine thread that finished its last running choice, so a request whose
// client is gone is still recorded; the hook must not block either.
class RequestStream final : public std::enable_shared_from_this<RequestStream> {
 public:
  // `results[i]` and `empty_content[i]` for every choice that ran (choices never submitted are left out: see close()).
  // `request_s`: seconds from the stream's construction (just before the first submission) to the last finish.
  // `refusal`: the engine refused a later choice (close()), which failed the request.
  using FinishHook = std::function<void(const std::vector<FinalResult>& results, const std::vector<bool>& empty_content,
                                        double request_s, const std::optional<SubmitResult>& refusal)>;

  RequestStream(int choices, std::shared_ptr<ServerMetrics> metrics, FinishHook on_finish_hook);

  // The sink the engine gets for choice `index` (it holds this stream, which must be owned by a shared_ptr).
  std::shared_ptr<GenerationSink> sink(int index);
  void on_delta(int index, Delta delta);
  void on_finish(int index, FinalResult result);

  // Only the first `submitted` choices will ever run (the rest were not submitted: the request was cancelled, or the
  // engine refused choice `submitted`, given as `refusal`): the hook fires once those have finished. Idempotent; the
  // smallest value wins.
  void close(int submitted, std::optional<SubmitResult> refusal = std::nullopt);

  struct Pending {
    std::vector<ChoiceDelta> deltas;
    std::vector<ChoiceFinal> finals;   // each choice's final once, with or after its last deltas
    bool aborted = false;              // abort() was called (the server is stopping)
  };
  // Returns what arrived since the last call: at once when something is pending, else when
  // something arrives, abort() is called, or `timeout` passes (then empty).
  Pending wait(std::chrono::milliseconds timeout);

  void abort();
  // Every choice that will run has finished (the hook has run).
  bool finished() const;
  // Choice `index` has produced output (a delta) or finished.
  bool started(int index) const;
  int choices() const { return static_cast<int>(slots_.size()); }
  double elapsed_s() const;  // seconds since construction

 private:
  struct Slot {
    bool output = false;          // a delta arrived
    bool finished = false;
    bool content_seen = false;
    std::optional<FinalResult> result;
    std::optional<std::chrono::steady_clock::time_point> last_output;
  };
  void fire_if_done(std::unique_lock<std::mutex>& lock);  // runs the hook (unlocked) once the last choice finished

  std::shared_ptr<ServerMetrics> metrics_;
  FinishHook hook_;
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  int expected_;                  // choices that will run
  int finished_count_ = 0;
  bool hook_fired_ = false;
  bool all_finished_ = false;     // set after the hook ran
  std::deque<ChoiceDelta> deltas_;
  std::deque<ChoiceFinal> finals_;
  std::optional<SubmitResult> refusal_;
  bool aborted_ = false;
};

}  // namespace ninfer::server
