// Owns the per-request hand-off between the engine (GenerationSink calls) and the HTTP thread that waits.
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

// The engine side never blocks: on_delta/on_finish append under a short lock and notify. The
// finish hook (JSONL line, metrics) runs on the engine thread inside on_finish, so a request whose
// client is gone is still recorded; the hook must not block either.
class RequestStream final : public GenerationSink {
 public:
  using FinishHook = std::function<void(const FinalResult& result, bool empty_content)>;

  RequestStream(std::shared_ptr<ServerMetrics> metrics, FinishHook on_finish_hook);

  void on_delta(Delta delta) override;
  void on_finish(FinalResult result) override;

  struct Pending {
    std::vector<Delta> deltas;
    std::optional<FinalResult> final;  // set once, with or after the last deltas
    bool aborted = false;              // abort() was called (the server is stopping)
  };
  // Returns what arrived since the last call: at once when something is pending, else when
  // something arrives, abort() is called, or `timeout` passes (then empty).
  Pending wait(std::chrono::milliseconds timeout);

  void abort();
  bool finished() const;

 private:
  std::shared_ptr<ServerMetrics> metrics_;
  FinishHook hook_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Delta> deltas_;
  std::optional<FinalResult> final_;
  bool final_taken_ = false;
  bool finished_ = false;
  bool aborted_ = false;
  bool content_seen_ = false;
  std::optional<std::chrono::steady_clock::time_point> last_output_;
};

}  // namespace ninfer::server
