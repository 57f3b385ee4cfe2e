// Owns the benches' RequestObserver: collects one request's output ids and result, and blocks until it finishes.
#pragma once

#include <condition_variable>
#include <mutex>
#include <span>
#include <vector>

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

}  // namespace ninfer::bench
