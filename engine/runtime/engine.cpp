#include "engine/runtime/engine.h"

#include <algorithm>
#include <random>

#include <spdlog/spdlog.h>

#include "engine/core/error.h"

namespace ninfer {

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kEos: return "eos";
    case FinishReason::kOutputLimit: return "output_limit";
    case FinishReason::kContextLimit: return "context_limit";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "error";
}

namespace {
double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }
}  // namespace

Engine::Engine(const Artifact& artifact, const ModelConfig& config, const EngineOptions& options)
    : config_(config), options_(options) {
  if (options_.max_context <= 0 || options_.prefill_chunk <= 0 || options_.max_concurrency <= 0)
    fail(ErrorKind::kInvalidArgument, "engine options: max_context, prefill_chunk and max_concurrency must be positive");
  if (options_.kv_capacity == 0) options_.kv_capacity = options_.max_concurrency * options_.max_context;
  backend_ = make_cpu_backend({.threads = options_.threads, .nvfp4_activations = options_.nvfp4_activations});
  model_ = std::make_unique<Model>(config_, ModelWeights::bind(artifact, config_), *backend_);
  const int64_t blocks = (options_.kv_capacity + options_.kv_block_size - 1) / options_.kv_block_size;
  kv_ = std::make_unique<KvCache>(*backend_, config_,
                                    KvCacheConfig{.block_size = options_.kv_block_size, .num_blocks = blocks,
                                                  .dtype = options_.kv_dtype});
  state_ = std::make_unique<LinearStateCache>(*backend_, config_, options_.max_concurrency);
  runner_ = std::make_unique<ModelRunner>(*model_, *kv_, *state_);
  scheduler_ = std::make_unique<Scheduler>(SchedulerLimits{.max_concurrency = options_.max_concurrency,
                                                           .prefill_chunk = options_.prefill_chunk,
                                                           .kv_blocks = blocks,
                                                           .block_size = options_.kv_block_size,
                                                           .state_slots = options_.max_concurrency});
  stats_.kv_blocks_total = blocks;
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

SubmitOutcome Engine::submit(EngineRequest request, std::shared_ptr<RequestObserver> observer) {
  SubmitOutcome out;
  const int64_t n = static_cast<int64_t>(request.prompt.size());
  if (n == 0) return {0, SubmitStatus::kInvalid, "the prompt is empty"};
  for (int32_t id : request.prompt)
    if (id < 0 || id >= config_.vocab_size)
      return {0, SubmitStatus::kInvalid, fmt::format("prompt token id {} is outside the vocabulary [0, {})", id, config_.vocab_size)};
  if (request.max_tokens < 0) return {0, SubmitStatus::kInvalid, "max_tokens must be positive"};
  const int64_t wanted = std::max<int64_t>(request.max_tokens, 1);  // at least one output token
  if (n + wanted > options_.max_context)
    return {0, SubmitStatus::kContextLength,
            fmt::format("this model's maximum context length is {} tokens; the prompt has {} tokens and {} output "
                        "tokens were requested ({} in all)",
                        options_.max_context, n, wanted, n + wanted)};

  auto seq = std::make_unique<Sequence>();
  seq->id = next_id_++;
  seq->accepted = Clock::now();
  seq->prompt_len = n;
  seq->output_limit = request.max_tokens > 0 ? request.max_tokens : options_.max_context - n;
  if (options_.greedy) request.sampling.greedy = true;
  seq->tokens = request.prompt;
  seq->sampler.emplace(request.sampling, std::random_device{}() ^ (uint64_t(seq->id) << 32), request.prompt);
  seq->request = std::move(request);
  seq->observer = std::move(observer);
  out.id = seq->id;
  {
    std::lock_guard lock(mu_);
    if (static_cast<size_t>(stats_.waiting) + inbox_.size() >= options_.max_waiting)
      return {0, SubmitStatus::kQueueFull, fmt::format("{} requests are already waiting", options_.max_waiting)};
    inbox_.push_back(std::move(seq));
  }
  wake_.notify_one();
  return out;
}

void Engine::cancel(RequestId id) {
  {
    std::lock_guard lock(mu_);
    cancels_.push_back(id);
  }
  wake_.notify_one();
}

EngineStats Engine::stats() const {
  std::lock_guard lock(mu_);
  EngineStats s = stats_;
  s.waiting += static_cast<int64_t>(inbox_.size());
  return s;
}

void Engine::finish(std::unique_ptr<Sequence> seq, FinishReason reason, std::string error) {
  kv_->release(static_cast<SeqId>(seq->id));
  if (seq->state_slot >= 0) state_->release(seq->state_slot);
  const auto now = Clock::now();
  RequestResult r;
  r.reason = reason;
  r.error = std::move(error);
  r.prompt_tokens = seq->prompt_len;
  r.completion_tokens = std::max<int64_t>(seq->completion_tokens(), 0);
  auto& t = r.timings;
  if (seq->scheduled_once) {
    t.queue_s = seconds(seq->accepted, seq->first_scheduled);
    if (seq->computed >= seq->prompt_len) t.prefill_s = seconds(seq->first_scheduled, seq->prefill_done);
  } else {
    t.queue_s = seconds(seq->accepted, now);
  }
  if (r.completion_tokens > 0) {
    t.ttft_s = seconds(seq->accepted, seq->first_token);
    t.decode_s = seconds(seq->first_token, seq->last_token);
  }
  t.total_s = seconds(seq->accepted, now);
  publish_stats();  // before on_finish, so a caller woken by it sees the freed blocks
  if (seq->observer) seq->observer->on_finish(r);
}

void Engine::append_output(Sequence& seq, const SampledToken& token, std::vector<OutputToken>& out, bool forced) {
  seq.tokens.push_back(token.id);
  const auto now = Clock::now();
  if (seq.completion_tokens() == 1) seq.first_token = now;
  seq.last_token = now;
  out.push_back({token, forced});
}

void Engine::loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !inbox_.empty() || !cancels_.empty() || !scheduler_->idle(); });
      if (stopping_) break;
      for (auto& s : inbox_) scheduler_->enqueue(std::move(s));
      inbox_.clear();
    }
    step();
  }
  // Shutting down: everything still known ends as cancelled.
  std::vector<std::unique_ptr<Sequence>> left;
  {
    std::lock_guard lock(mu_);
    for (auto& s : inbox_) left.push_back(std::move(s));
    inbox_.clear();
  }
  std::vector<RequestId> ids;
  for (const auto& s : scheduler_->running()) ids.push_back(s->id);
  for (const auto& s : scheduler_->waiting()) ids.push_back(s->id);
  for (RequestId id : ids) left.push_back(scheduler_->remove(id));
  for (auto& s : left) finish(std::move(s), FinishReason::kCancelled);
}

void Engine::step() {
  std::vector<RequestId> cancels;
  {
    std::lock_guard lock(mu_);
    cancels.swap(cancels_);
  }
  for (RequestId id : cancels)
    if (auto s = scheduler_->remove(id)) finish(std::move(s), FinishReason::kCancelled);

  auto plan = scheduler_->schedule([&](Sequence& s) { s.state_slot = state_->acquire(); });
  if (!plan.empty()) {
    const auto now = Clock::now();
    std::vector<SequenceStep> steps;
    steps.reserve(plan.size());
    for (auto& c : plan) {
      if (!c.seq->scheduled_once) c.seq->scheduled_once = true, c.seq->first_scheduled = now;
      steps.push_back({static_cast<SeqId>(c.seq->id), c.seq->state_slot, c.begin,
                       std::span(c.seq->tokens).subspan(static_cast<size_t>(c.begin), static_cast<size_t>(c.end - c.begin)),
                       false});
    }
    std::span<const float> logits;
    try {
      logits = runner_->step(steps);
    } catch (const std::exception& e) {
      spdlog::error("engine step failed: {}", e.what());
      for (auto& c : plan) finish(scheduler_->remove(c.seq->id), FinishReason::kError, e.what());
      plan.clear();
    }
    const size_t V = static_cast<size_t>(config_.vocab_size);
    std::vector<float> row(V);
    for (size_t i = 0; i < plan.size(); ++i) {
      Sequence& s = *plan[i].seq;
      s.computed = plan[i].end;
      if (s.prefilling()) continue;  // a prompt chunk that does not finish the prompt: nothing to sample
      if (s.completion_tokens() == 0) s.prefill_done = Clock::now();
      std::copy_n(logits.begin() + static_cast<std::ptrdiff_t>(i * V), V, row.begin());
      std::vector<OutputToken> out;
      SampledToken tok = s.sampler->sample(row);
      append_output(s, tok, out, false);
      std::optional<FinishReason> reason;
      auto is_stop = [&](int32_t id) {
        return std::find(s.request.stop_ids.begin(), s.request.stop_ids.end(), id) != s.request.stop_ids.end();
      };
      if (is_stop(tok.id)) reason = FinishReason::kEos;
      if (!reason && s.request.controller) {
        for (int32_t f : s.request.controller->after_token(tok.id)) {
          if (s.completion_tokens() >= s.output_limit) break;
          s.sampler->observe(f);
          SampledToken ft;
          ft.id = f;
          append_output(s, ft, out, true);
        }
      }
      if (!reason && s.completion_tokens() >= s.output_limit)
        reason = s.request.max_tokens > 0 && s.completion_tokens() >= s.request.max_tokens ? FinishReason::kOutputLimit
                                                                                          : FinishReason::kContextLimit;
      if (s.observer) s.observer->on_tokens(out);
      if (reason) finish(scheduler_->remove(s.id), *reason);
    }
  }
  publish_stats();
}

void Engine::publish_stats() {
  std::lock_guard lock(mu_);
  stats_.running = static_cast<int64_t>(scheduler_->running().size());
  stats_.waiting = static_cast<int64_t>(scheduler_->waiting().size());
  stats_.kv_blocks_used = scheduler_->committed_blocks();
}

}  // namespace ninfer
