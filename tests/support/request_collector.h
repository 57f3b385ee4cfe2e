// Owns the test-side RequestObserver: collects a request's output tokens and result, and waits for them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "engine/runtime/request.h"

namespace ninfer::testing {

class Collector : public RequestObserver {
 public:
  void on_tokens(std::span<const OutputToken> t) override {
    std::lock_guard lock(mu_);
    for (const auto& o : t) tokens.push_back(o.token.id), forced.push_back(o.forced), logprobs.push_back(o.token.logprob);
    cv_.notify_all();
  }
  void on_finish(const RequestResult& r) override {
    std::lock_guard lock(mu_);
    result = r;
    done = true;
    cv_.notify_all();
  }
  // Fails the calling test when the request has not finished within `timeout`.
  void wait(std::chrono::seconds timeout = std::chrono::seconds(120)) {
    std::unique_lock lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, timeout, [&] { return done; }));
  }
  void wait_tokens(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(60), [&] { return tokens.size() >= n || done; });
  }
  std::vector<int32_t> tokens;
  std::vector<bool> forced;
  std::vector<float> logprobs;  // of each token (0 unless the request asked for logprobs)
  RequestResult result;
  bool done = false;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace ninfer::testing
