#include "server/request_stream.h"

#include <algorithm>

namespace ninfer::server {

namespace {

// One choice's GenerationSink: forwards to the request's stream with the choice's index.
class ChoiceSink final : public GenerationSink {
 public:
  ChoiceSink(std::shared_ptr<RequestStream> stream, int index) : stream_(std::move(stream)), index_(index) {}
  void on_delta(Delta delta) override { stream_->on_delta(index_, std::move(delta)); }
  void on_finish(FinalResult result) override { stream_->on_finish(index_, std::move(result)); }

 private:
  std::shared_ptr<RequestStream> stream_;
  int index_;
};

}  // namespace

RequestStream::RequestStream(int choices, std::shared_ptr<ServerMetrics> metrics, FinishHook on_finish_hook)
    : metrics_(std::move(metrics)),
      hook_(std::move(on_finish_hook)),
      slots_(static_cast<size_t>(std::max(choices, 1))),
      expected_(std::max(choices, 1)) {}

std::shared_ptr<GenerationSink> RequestStream::sink(int index) {
  return std::make_shared<ChoiceSink>(shared_from_this(), index);
}

void RequestStream::on_delta(int index, Delta delta) {
  std::optional<double> gap;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& s = slots_.at(static_cast<size_t>(index));
    if (s.finished) return;  // a misbehaving engine: nothing after the final result
    if (delta.tokens > 0) {
      auto now = std::chrono::steady_clock::now();
      if (s.last_output) gap = std::chrono::duration<double>(now - *s.last_output).count();
      s.last_output = now;
    }
    if (delta.channel == Channel::kContent && !delta.text.empty()) s.content_seen = true;
    s.output = true;
    deltas_.push_back({index, std::move(delta)});
  }
  cv_.notify_all();
  if (gap && metrics_) metrics_->record_token_gap(*gap);
}

void RequestStream::on_finish(int index, FinalResult result) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    Slot& s = slots_.at(static_cast<size_t>(index));
    if (s.finished) return;
    s.finished = true;
    s.result = result;
    ++finished_count_;
    // The request's last choice: its line is written before the HTTP thread can see the final and answer.
    fire_if_done(lock);
    finals_.push_back({index, std::move(result)});
  }
  cv_.notify_all();
}

void RequestStream::close(int submitted, std::optional<SubmitResult> refusal) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (submitted >= expected_) return;
    expected_ = std::max(submitted, 0);
    refusal_ = std::move(refusal);
    fire_if_done(lock);
  }
  cv_.notify_all();
}

void RequestStream::fire_if_done(std::unique_lock<std::mutex>& lock) {
  if (hook_fired_ || finished_count_ < expected_) return;
  hook_fired_ = true;
  std::vector<FinalResult> results;
  std::vector<bool> empty;
  const std::optional<SubmitResult> refusal = refusal_;
  for (int i = 0; i < expected_; ++i) {
    const Slot& s = slots_[static_cast<size_t>(i)];
    results.push_back(*s.result);  // the first `expected_` choices have all finished
    empty.push_back(!s.content_seen);
  }
  lock.unlock();
  if (hook_ && !results.empty()) hook_(results, empty, elapsed_s(), refusal);
  lock.lock();
  all_finished_ = true;
}

RequestStream::Pending RequestStream::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [this] { return !deltas_.empty() || !finals_.empty() || aborted_; };
  cv_.wait_for(lock, timeout, ready);
  Pending p;
  p.deltas.assign(std::make_move_iterator(deltas_.begin()), std::make_move_iterator(deltas_.end()));
  deltas_.clear();
  p.finals.assign(std::make_move_iterator(finals_.begin()), std::make_move_iterator(finals_.end()));
  finals_.clear();
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
  return all_finished_;
}

double RequestStream::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - created_).count();
}

bool RequestStream::started(int index) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Slot& s = slots_.at(static_cast<size_t>(index));
  return s.output || s.finished;
}

}  // namespace ninfer::server
