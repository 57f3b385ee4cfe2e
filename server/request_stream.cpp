#include "server/request_stream.h"

namespace ninfer::server {

RequestStream::RequestStream(std::shared_ptr<ServerMetrics> metrics, FinishHook on_finish_hook)
    : metrics_(std::move(metrics)), hook_(std::move(on_finish_hook)) {}

void RequestStream::on_delta(Delta delta) {
  std::optional<double> gap;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;  // a misbehaving engine: nothing after the final result
    if (delta.tokens > 0) {
      auto now = std::chrono::steady_clock::now();
      if (last_output_) gap = std::chrono::duration<double>(now - *last_output_).count();
      last_output_ = now;
    }
    if (delta.channel == Channel::kContent && !delta.text.empty()) content_seen_ = true;
    deltas_.push_back(std::move(delta));
  }
  cv_.notify_all();
  if (gap && metrics_) metrics_->record_token_gap(*gap);
}

void RequestStream::on_finish(FinalResult result) {
  bool empty_content;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
    empty_content = !content_seen_;
  }
  if (hook_) hook_(result, empty_content);
  {
    std::lock_guard<std::mutex> lock(mu_);
    final_ = std::move(result);
  }
  cv_.notify_all();
}

RequestStream::Pending RequestStream::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [this] { return !deltas_.empty() || (final_ && !final_taken_) || aborted_; };
  cv_.wait_for(lock, timeout, ready);
  Pending p;
  p.deltas.assign(std::make_move_iterator(deltas_.begin()), std::make_move_iterator(deltas_.end()));
  deltas_.clear();
  if (final_ && !final_taken_) {
    p.final = *final_;
    final_taken_ = true;
  }
  p.aborted = aborted_;
  return p;
}

void RequestStream::abort() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
  }
  cv_.notify_all();
}

bool RequestStream::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finished_;
}

}  // namespace ninfer::server
