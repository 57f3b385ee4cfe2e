// Owns the benches' RequestObserver (collects one request's output ids and result, and blocks until it finishes) and
// the greedy request every engine bench runs with it.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/request.h"

namespace ninfer::bench {

class RequestWaiter final : public RequestObserver {
 public:
  void on_tokens(std::span<const OutputToken> t) override {
    std::lock_guard lock(mu_);
    for (const auto& o : t) tokens.push_back(o.token.id);
  }
  void on_finish(const RequestResult& r) override {
    std::lock_guard lock(mu_);
    result = r;
    done_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_; });
  }
  std::vector<int32_t> tokens;
  RequestResult result;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// Runs one greedy request of `max_tokens` after `prompt` on `e` and waits for it; a refused or failed request is an
// Error naming `what` and the engine's reason.
inline std::shared_ptr<RequestWaiter> run_greedy(Engine& e, std::vector<int32_t> prompt, int64_t max_tokens,
                                                 std::string_view what = "request") {
  EngineRequest r;
  r.prompt = std::move(prompt);
  r.sampling.greedy = true;
  r.max_tokens = max_tokens;
  auto w = std::make_shared<RequestWaiter>();
  const SubmitOutcome o = e.submit(std::move(r), w);
  if (!o.accepted()) fail(ErrorKind::kInvalidArgument, "{} refused: {}", what, o.message);
  w->wait();
  if (w->result.reason == FinishReason::kError) fail(ErrorKind::kInternal, "{} failed: {}", what, w->result.error);
  return w;
}

}  // namespace ninfer::bench
