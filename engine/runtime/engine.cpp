#include "engine/runtime/engine.h"

#include <algorithm>
#include <limits>
#include <random>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "engine/core/error.h"
#include "engine/core/failpoint.h"
#include "engine/parallel/rank_replica.h"
#include "engine/parallel/remote_ranks.h"

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

DrafterLimits drafter_limits(const EngineOptions& o, int64_t max_context) {
  // The drafter may write scratch up to draft_tokens positions past a sequence's last one.
  return {.max_sequences = o.max_concurrency, .max_context = max_context + o.draft_tokens, .draft_tokens = o.draft_tokens};
}

int64_t prefix_snapshot_rows(const ModelConfig& config, const EngineOptions& o) {
  if (!o.prefix_cache || o.drafter || config.num_linear_attention_layers() == 0) return 0;
  if (o.prefix_snapshots < 0) fail(ErrorKind::kInvalidArgument, "engine options: prefix_snapshots {} < 0", o.prefix_snapshots);
  return o.prefix_snapshots > 0 ? o.prefix_snapshots : 2 * static_cast<int64_t>(o.max_concurrency);
}

int64_t prefix_state_rows(const ModelConfig& config, const EngineOptions& o) {
  const int64_t snapshots = prefix_snapshot_rows(config, o);
  return snapshots > 0 ? o.max_concurrency + snapshots : 0;
}

Engine::Engine(const Artifact& artifact, const ModelConfig& config, const EngineOptions& options)
    : config_(config), options_(options) {
  // spdlog's registry is a lazily built static; build it here, before the loop thread logs, so that threads
  // never race to create it (ThreadSanitizer cannot see the guard inside the uninstrumented libspdlog).
  spdlog::default_logger_raw();
  if (options_.max_context <= 0 || options_.prefill_chunk <= 0 || options_.max_concurrency <= 0)
    fail(ErrorKind::kInvalidArgument, "engine options: max_context, prefill_chunk and max_concurrency must be positive");
  if (config_.exact_context_limit > 0 && options_.max_context > config_.exact_context_limit)
    fail(ErrorKind::kUnsupported, "max_context {} is longer than the model's sliding window of {} tokens (config.json "
         "sliding_window): positions past it would attend to a window only, which ninfer does not compute; use "
         "--max-context {} or less", options_.max_context, config_.exact_context_limit, config_.exact_context_limit);
  if (options_.kv_capacity == 0) options_.kv_capacity = options_.max_concurrency * options_.max_context;
  if (!options_.output_ids.empty()) {
    if (static_cast<int64_t>(options_.output_ids.size()) != config_.vocab_size)
      fail(ErrorKind::kInvalidArgument, "engine options: output_ids has {} flags but the model's vocab_size is {}",
           options_.output_ids.size(), config_.vocab_size);
    if (std::count(options_.output_ids.begin(), options_.output_ids.end(), uint8_t{0}) == config_.vocab_size)
      fail(ErrorKind::kInvalidArgument, "engine options: output_ids allows no id at all");
  }
  const int tp = options_.tp;
  if (tp < 1) fail(ErrorKind::kInvalidArgument, "engine options: tp {} must be at least 1", tp);
  if (tp > 1 && options_.backend == BackendKind::kAuto) {
    std::string why;
    BackendSelection probe{.kind = BackendKind::kAuto, .device = options_.device};
    options_.backend = resolve_backend(probe, &why);
    spdlog::info("tensor parallelism (tp {}) on the {} backend ({})", tp, backend_kind_name(options_.backend), why);
  }
  if (tp > 1 && options_.backend == BackendKind::kCuda && options_.process_group) {
    // One rank per process: this one runs on its own GPU (`device`), the others on theirs.
    if (options_.devices.size() > 1)
      fail(ErrorKind::kInvalidArgument, "engine options: {} devices for one rank of a process group",
           options_.devices.size());
    if (!options_.devices.empty()) options_.device = options_.devices.front();
    options_.devices.clear();
  } else if (tp > 1 && options_.backend == BackendKind::kCuda) {
    if (options_.devices.empty())
      for (int r = 0; r < tp; ++r) options_.devices.push_back(options_.device + r);
    if (static_cast<int>(options_.devices.size()) != tp)
      fail(ErrorKind::kInvalidArgument, "engine options: {} devices for tp {}", options_.devices.size(), tp);
    options_.device = options_.devices.front();
  }
  const BackendSelection selection{.kind = options_.backend,
                                   .device = options_.device,
                                   .threads = tp > 1 && !options_.process_group ? tp_rank_threads(options_.threads, tp)
                                                                                  : options_.threads,
                                   .nvfp4_activations = options_.nvfp4_activations,
                                   .bf16_activations = options_.bf16_activations,
                                   .op_profile = options_.op_profile};
  backend_ = make_backend(selection);
  weights_ = std::make_unique<WeightStore>(*backend_);
  const auto upload_start = Clock::now();
  const int64_t blocks = (options_.kv_capacity + options_.kv_block_size - 1) / options_.kv_block_size;
  const KvCacheConfig kv_config{.block_size = options_.kv_block_size, .num_blocks = blocks, .dtype = options_.kv_dtype};
  // A verification block of K drafts has K + 1 rows; all but the last need a GDN state checkpoint.
  const int64_t checkpoints = options_.drafter ? options_.draft_tokens : 0;
  ModelConfig rank_config = config_;  // rank 0's: its local heads under TP
  if (tp > 1) {
    const ModelWeights full = ModelWeights::bind(artifact, config_);
    const TpSetup setup{.tp = tp, .backend = selection, .devices = options_.devices, .kv = kv_config,
                        .state_slots = options_.max_concurrency, .state_checkpoints = checkpoints,
                        .state_extra_rows = ninfer::prefix_state_rows(config_, options_)};
    if (GlooGroup* group = options_.process_group) {
      if (group->size() != tp || group->rank() != 0)
        fail(ErrorKind::kInvalidArgument, "engine options: tp {} driven by rank {} of a process group of {}", tp,
             group->rank(), group->size());
      log_tp_layouts(config_, tp);
      tp_ = std::make_unique<RemoteRanks>(*group, group_setup(setup, artifact, config_), options_.join_timeout,
                                          options_.on_group_lost);
      if (selection.kind == BackendKind::kCuda)
        spdlog::info("tensor parallelism: {} CUDA ranks, one per process; this one on device {}; collectives through "
                     "host memory over Gloo (docs/parallel.md)", tp, selection.device);
      else
        spdlog::info("tensor parallelism: {} CPU ranks, one per process; this one of {} threads", tp, selection.threads);
    } else {
      tp_ = std::make_unique<TpRanks>(full, config_, setup);
      if (selection.kind == BackendKind::kCuda)
        spdlog::info("tensor parallelism: {} CUDA ranks on devices {}", tp, fmt::join(options_.devices, ","));
      else
        spdlog::info("tensor parallelism: {} CPU ranks of {} threads each", tp, selection.threads);
    }
    const TpLayout layout = tp_layout(config_, 0, tp);
    rank_config = tp_rank_config(config_, layout);
    model_ = std::make_unique<Model>(rank_config, placed_shard(shard_weights(full, config_, layout), *weights_, "rank 0"),
                                     *backend_, tp_->leader_communicator());
  } else {
    model_ = std::make_unique<Model>(config_, placed(ModelWeights::bind(artifact, config_), *weights_, "model"), *backend_);
  }
  model_->enable_step_graphs(options_.step_graphs);
  model_->set_output_mask(options_.output_ids);  // masked on the backend, before logits or argmax leave it
  if (weights_->on_device())
    spdlog::info("weights uploaded to the device: {:.1f} MiB in {:.2f} s", double(weights_->device_bytes()) / (1 << 20),
                 seconds(upload_start, Clock::now()));
  kv_ = std::make_unique<KvCache>(*backend_, rank_config, kv_config);
  if (options_.drafter && options_.draft_tokens < 1)
    fail(ErrorKind::kInvalidArgument, "engine options: draft_tokens {} must be at least 1", options_.draft_tokens);
  // Prefix reuse: a hybrid model keeps GDN state snapshots in extra linear-state rows, one boundary row per sequence
  // slot (the state at its last block boundary) and then the cache's snapshot rows.
  const bool prefix = options_.prefix_cache && !options_.drafter;
  if (options_.prefix_cache && options_.drafter)
    spdlog::warn("prefix reuse is off with speculative decoding (the drafter keeps its own caches): every prompt is "
                 "prefilled cold");
  const bool hybrid = config_.num_linear_attention_layers() > 0;
  state_ = std::make_unique<LinearStateCache>(*backend_, rank_config, options_.max_concurrency, checkpoints,
                                              ninfer::prefix_state_rows(config_, options_));
  // Under TP every state operation below (zeroing an acquired slot, prefix snapshots) is rank 0's bookkeeping, done on
  // every rank's state; adopting a speculative checkpoint changes only which rows rank 0's batches name.
  if (tp_) tp_->mirror_state(*state_);
  if (prefix) {
    std::vector<int32_t> rows;
    for (int64_t i = 0; i < ninfer::prefix_snapshot_rows(config_, options_); ++i)
      rows.push_back(state_->extra_row(options_.max_concurrency + i));
    prefix_ = std::make_unique<PrefixCache>(*kv_, *state_, hybrid, std::move(rows));
    kv_->set_reclaimer([this] { return prefix_->evict_one(); });
  }
  runner_ = std::make_unique<ModelRunner>(*model_, *kv_, *state_);
  runner_->set_ranks(tp_.get());
  if (options_.drafter) {
    const DrafterLimits limits = drafter_limits(options_, options_.max_context);
    std::unique_ptr<Drafter> drafter;
    if (tp_) drafter = tp_->sharded_drafter(options_.drafter, *weights_, limits);
    if (drafter) {
      spdlog::info("speculative decoding under tensor parallelism: the drafter is split over the {} ranks as the "
                   "target's layers are (docs/parallel.md)", tp_->size());
    } else {
      drafter = options_.drafter(*weights_, limits);
      if (tp_)
        spdlog::info("speculative decoding under tensor parallelism: the drafter runs whole on rank 0, conditioned on "
                     "rank 0's target features ({}; docs/parallel.md)",
                     options_.drafter.shard ? "the other processes cannot build this drafter" : "this drafter is not split");
    }
    spec_ = std::make_unique<SpecDecoder>(std::move(drafter), options_.draft_tokens, options_.max_concurrency, *state_,
                                          config_.vocab_size);
    spec_totals_.accepted_at.assign(static_cast<size_t>(options_.draft_tokens), 0);
    spdlog::info("speculative decoding: {} draft tokens per step", options_.draft_tokens);
  }
  row_.resize(static_cast<size_t>(config_.vocab_size));
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
  for (int32_t id : request.prompt) {
    if (id < 0 || id >= config_.vocab_size)
      return {0, SubmitStatus::kInvalid, fmt::format("prompt token id {} is outside the vocabulary [0, {})", id, config_.vocab_size)};
    if (!options_.output_ids.empty() && !options_.output_ids[static_cast<size_t>(id)])
      return {0, SubmitStatus::kInvalid,
              fmt::format("prompt token id {} is not a token of the tokenizer (a padded embedding row)", id)};
  }
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
  seq->sampler->set_constraint(seq->request.constraint.get());
  if (seq->request.constraint) seq->request.constraint->start(seq->output_limit);
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
  if (prefix_ && reason != FinishReason::kError && seq->state_slot >= 0) keep_prefix(*seq);
  kv_->release(static_cast<SeqId>(seq->id));
  if (seq->state_slot >= 0) {
    state_->release(seq->state_slot);
    if (spec_) spec_->release(static_cast<SeqId>(seq->id));  // in the drafter since admission
  }
  const auto now = Clock::now();
  RequestResult r;
  r.reason = reason;
  r.error = std::move(error);
  r.prompt_tokens = seq->prompt_len;
  r.cached_tokens = seq->cached_tokens;
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
  r.spec = std::move(seq->spec);
  publish_stats();  // before on_finish, so a caller woken by it sees the freed blocks
  if (!seq->observer) return;
  try {
    seq->observer->on_finish(r);
  } catch (const std::exception& e) {
    spdlog::error("request {}: the observer's on_finish threw: {}", seq->id, e.what());
  } catch (...) {
    spdlog::error("request {}: the observer's on_finish threw", seq->id);
  }
}

std::optional<std::string> Engine::deliver(Sequence& seq, std::span<const OutputToken> tokens) {
  try {
    seq.observer->on_tokens(tokens);
    return std::nullopt;
  } catch (const std::exception& e) {
    spdlog::error("request {}: its output could not be handled, the request ends: {}", seq.id, e.what());
    return fmt::format("the output of the request could not be handled: {}", e.what());
  } catch (...) {
    spdlog::error("request {}: its output could not be handled (unknown exception), the request ends", seq.id);
    return std::string("the output of the request could not be handled");
  }
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

std::optional<FinishReason> Engine::commit(Sequence& s, const SampledToken& tok, std::vector<OutputToken>& out,
                                           bool& forced) {
  append_output(s, tok, out, false);
  if (std::find(s.request.stop_ids.begin(), s.request.stop_ids.end(), tok.id) != s.request.stop_ids.end())
    return FinishReason::kEos;
  if (s.request.controller) {
    for (int32_t f : s.request.controller->after_token(tok.id)) {
      if (s.completion_tokens() >= s.output_limit) break;
      s.sampler->observe(f);
      SampledToken ft;
      ft.id = f;
      append_output(s, ft, out, true);
      forced = true;
    }
  }
  if (s.completion_tokens() >= s.output_limit)
    return s.request.max_tokens > 0 && s.completion_tokens() >= s.request.max_tokens ? FinishReason::kOutputLimit
                                                                                    : FinishReason::kContextLimit;
  return std::nullopt;
}

void Engine::draft(const std::vector<ScheduledChunk>& plan) {
  block_of_.assign(plan.size(), -1);
  if (!spec_) return;
  draft_reqs_.clear();
  for (size_t i = 0; i < plan.size(); ++i) {
    const Sequence& s = *plan[i].seq;
    if (s.prefilling() || plan[i].end - plan[i].begin != 1) continue;  // prompt chunks, forced tokens: plain rows
    // Every verified block commits at least one token; drafts past the output limit could never be committed,
    // so the block's KV rows stay inside what admission reserved.
    const int64_t room = s.output_limit - s.completion_tokens() - 1;
    const int32_t k = static_cast<int32_t>(std::min<int64_t>(spec_->draft_tokens(), room));
    if (k < 1) continue;
    block_of_[i] = static_cast<int32_t>(draft_reqs_.size());
    draft_reqs_.push_back({static_cast<SeqId>(s.id), s.tokens.back(), k});
  }
  spec_->draft(draft_reqs_);
}

std::optional<FinishReason> Engine::commit_block(Sequence& s, size_t chunk, const StepRows& rows_of_block,
                                                 std::vector<OutputToken>& out) {
  const std::span<const int32_t> block = spec_->block(static_cast<size_t>(block_of_[chunk]));
  const int32_t k = static_cast<int32_t>(block.size()) - 1;
  const int64_t begin = s.computed;  // the pending token's position
  std::optional<FinishReason> reason;
  int32_t rows = 0, accepted = 0;  // committed rows of the block, accepted drafts
  for (int32_t j = 0; j <= k; ++j) {
    bool ok = false, forced = false;
    const int32_t draft = j < k ? block[static_cast<size_t>(j) + 1] : -1;
    const size_t row = static_cast<size_t>(j);
    const SampledToken tok = j < k ? rows_of_block.verify(*s.sampler, row, draft, ok, row_)
                                   : rows_of_block.sample(*s.sampler, row, row_);
    ++rows;
    accepted += ok ? 1 : 0;
    reason = commit(s, tok, out, forced);
    if (reason || forced || !ok) break;  // a stop, forced tokens or the first rejection end the block
  }
  const size_t positions = static_cast<size_t>(spec_->draft_tokens());
  s.spec.record_step(k, accepted, positions);
  spec_totals_.record_step(k, accepted, positions);
  // Rows [0, rows) are committed: the caches keep exactly them (the state after row rows − 1 is its checkpoint,
  // which becomes the slot's live row; when every row is committed the live row already holds it).
  s.computed = begin + rows;
  if (!reason) {
    kv_->truncate(static_cast<SeqId>(s.id), s.computed);
    if (rows < k + 1) state_->adopt_checkpoint(s.state_slot, rows - 1);
  }
  return reason;
}

void Engine::step() {
  backend_->bind_thread();  // the step's thread may not be the one that built the engine
  std::vector<RequestId> cancels;
  {
    std::lock_guard lock(mu_);
    cancels.swap(cancels_);
  }
  for (RequestId id : cancels)
    if (auto s = scheduler_->remove(id)) finish(std::move(s), FinishReason::kCancelled);

  auto plan = scheduler_->schedule([&](Sequence& s) {
    s.state_slot = state_->acquire();
    if (spec_) spec_->add(static_cast<SeqId>(s.id));
    if (prefix_) reuse_prefix(s);
  }, [](Sequence& s) { return !s.request.constraint || s.request.constraint->ready(); });
  if (plan.empty()) {
    publish_stats();
    return;
  }
  const auto now = Clock::now();
  StepRows answer{.vocab = static_cast<size_t>(config_.vocab_size)};  // the step's logit rows, in the form it asked
  try {
    failpoint("engine.step");
    draft(plan);
    steps_.clear();
    for (size_t i = 0; i < plan.size(); ++i) {
      auto& c = plan[i];
      if (!c.seq->scheduled_once) c.seq->scheduled_once = true, c.seq->first_scheduled = now;
      SequenceStep st{static_cast<SeqId>(c.seq->id), state_->row(c.seq->state_slot), c.begin,
                      std::span(c.seq->tokens).subspan(static_cast<size_t>(c.begin), static_cast<size_t>(c.end - c.begin)),
                      false};
      if (block_of_[i] >= 0) {  // verification: [pending, d1..dk], every row's logits, a state checkpoint per row
        st.tokens = spec_->block(static_cast<size_t>(block_of_[i]));
        st.all_logits = true;
        st.checkpoint_slots = spec_->checkpoints(static_cast<size_t>(block_of_[i]), c.seq->state_slot);
      }
      steps_.push_back(st);
    }
    const FeatureSpec* capture = spec_ ? &spec_->features() : nullptr;
    const LogitsForm form = logits_form(plan);
    edits_.clear();
    if (form.argmax || form.top_k > 0) collect_edits(plan);
    if (form.argmax) {
      answer.argmax = runner_->step_argmax(steps_, capture, edits_);
      argmax_rows_ += static_cast<int64_t>(answer.argmax.size());
    } else if (form.top_k > 0) {
      answer.top = runner_->step_top(steps_, form.top_k, capture, edits_);
      answer.k = form.top_k;
      top_rows_ += static_cast<int64_t>(answer.top.size()) / (2 * form.top_k);
    } else {
      answer.logits = runner_->step(steps_, capture);
    }
  } catch (const std::exception& e) {
    spdlog::error("engine step failed: {}", e.what());
    for (auto& c : plan) finish(scheduler_->remove(c.seq->id), FinishReason::kError, e.what());
    plan.clear();
  }
  const size_t width = spec_ ? static_cast<size_t>(spec_->features().width(config_.hidden_size)) : 0;
  const std::span<const float> features = runner_->features();
  size_t logit_row = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    Sequence& s = *plan[i].seq;
    const int64_t begin = plan[i].begin;
    const size_t nrows = steps_[i].all_logits ? steps_[i].tokens.size() : 1;
    const StepRows rows = answer.slice(logit_row, nrows);
    logit_row += nrows;
    std::optional<FinishReason> reason;
    std::vector<OutputToken> out;
    std::string sampling_failed;  // a request's constraint refused a token: that request ends, the others go on
    try {
      if (block_of_[i] >= 0) {
        reason = commit_block(s, i, rows, out);
      } else {
        s.computed = plan[i].end;
        if (prefix_) note_progress(s, begin);
        if (!s.prefilling()) {  // a prompt chunk that does not finish the prompt has nothing to sample
          if (s.completion_tokens() == 0) s.prefill_done = Clock::now();
          bool forced = false;
          reason = commit(s, rows.sample(*s.sampler, 0, row_), out, forced);
        }
      }
    } catch (const std::exception& e) {
      sampling_failed = e.what();
    }
    if (!sampling_failed.empty()) {
      spdlog::error("request {}: choosing its next token failed, the request ends: {}", s.id, sampling_failed);
      if (!out.empty() && s.observer) deliver(s, out);
      finish(scheduler_->remove(s.id), FinishReason::kError, "choosing the next token failed: " + sampling_failed);
      continue;
    }
    if (!out.empty() && s.observer)
      if (std::optional<std::string> failed = deliver(s, out)) {
        finish(scheduler_->remove(s.id), FinishReason::kError, std::move(*failed));
        continue;
      }
    if (reason) {
      finish(scheduler_->remove(s.id), *reason);
      continue;
    }
    if (spec_) {  // the committed rows [begin, computed) and the tokens that followed them
      const size_t n = static_cast<size_t>(s.computed - begin);
      const size_t row0 = static_cast<size_t>(runner_->row_start(i));
      spec_->queue({static_cast<SeqId>(s.id), begin, std::span(s.tokens).subspan(static_cast<size_t>(begin) + 1, n),
                    features.empty() ? std::span<const float>() : features.subspan(row0 * width, n * width)});
    }
  }
  if (spec_) spec_->flush();
  publish_stats();
}

void Engine::reuse_prefix(Sequence& s) {
  const int64_t bs = kv_->block_size();
  // At least the prompt's last token is computed: its logits give the first output token.
  const PrefixMatch m = prefix_->match(std::span(s.tokens).first(static_cast<size_t>(s.prompt_len)), s.prompt_len - 1);
  if (m.tokens > 0) {
    kv_->adopt(static_cast<SeqId>(s.id), m.blocks);
    if (m.snapshot_row >= 0) state_->copy_slot(state_->row(s.state_slot), m.snapshot_row);
    s.computed = s.cached_tokens = m.tokens;
  }
  // A hybrid model can only resume where a GDN snapshot was taken. The prefill stops, and the state is kept, where
  // this prompt leaves the cached K/V of an earlier one (a shared system prompt: the next prompt that shares it
  // resumes there) and at the prompt's last block boundary (the same prompt again).
  if (prefix_->needs_state()) {
    s.split_at.clear();
    s.branch_at = m.kv_tokens > s.computed ? m.kv_tokens : 0;
    for (int64_t at : {s.branch_at, (s.prompt_len - 1) / bs * bs})
      if (at > s.computed && (s.split_at.empty() || at > s.split_at.back())) s.split_at.push_back(at);
  }
}

void Engine::note_progress(Sequence& s, int64_t begin) {
  const int64_t bs = kv_->block_size();
  const auto tokens = std::span(s.tokens);
  if (!prefix_->needs_state()) {
    // K/V alone make a prefix reusable: publish the prompt's whole blocks as soon as the prompt is in.
    if (begin < s.prompt_len && !s.prefilling())
      prefix_->insert(tokens.first(static_cast<size_t>(s.computed / bs * bs)), kv_->blocks(static_cast<SeqId>(s.id)));
    return;
  }
  if (s.computed % bs != 0 || s.computed == begin) return;  // the state is only kept at block boundaries
  if (std::find(s.split_at.begin(), s.split_at.end(), s.computed) != s.split_at.end()) {
    prefix_->insert(tokens.first(static_cast<size_t>(s.computed)), kv_->blocks(static_cast<SeqId>(s.id)),
                    state_->row(s.state_slot), s.computed == s.branch_at);
  } else {
    state_->copy_slot(boundary_row(s), state_->row(s.state_slot));
    s.boundary_at = s.computed;
  }
}

void Engine::keep_prefix(const Sequence& s) {
  const auto& blocks = kv_->blocks(static_cast<SeqId>(s.id));
  const auto tokens = std::span(s.tokens);
  if (!prefix_->needs_state()) {
    const int64_t bs = kv_->block_size();
    prefix_->insert(tokens.first(static_cast<size_t>(s.computed / bs * bs)), blocks);
  } else if (s.boundary_at > 0) {
    prefix_->insert(tokens.first(static_cast<size_t>(s.boundary_at)), blocks, boundary_row(s));
  }
}

namespace {

// Whether a scheduled chunk's logit rows are sampled: a verification block, or a chunk that ends the prompt or follows it.
bool samples(const ScheduledChunk& c, bool verifies) { return verifies || c.end >= c.seq->prompt_len; }

}  // namespace

LogitsForm Engine::logits_form(const std::vector<ScheduledChunk>& plan) const {
  if (!options_.backend_choice) return {};
  int32_t k = 0;
  bool greedy = true;
  for (size_t i = 0; i < plan.size(); ++i) {
    const Sequence& s = *plan[i].seq;
    if (!samples(plan[i], block_of_[i] >= 0)) continue;
    const int32_t need = s.sampler->candidates_needed();
    if (need == 0) return {};
    greedy = greedy && s.sampler->plain_greedy();
    k = std::max(k, need);
  }
  if (greedy) return {.argmax = true};
  if (k > kTopKRowsMax || config_.vocab_size > kMaxRowsColumns) return {};
  return {.top_k = k};
}

void Engine::collect_edits(const std::vector<ScheduledChunk>& plan) {
  const int64_t vocab = config_.vocab_size;
  int32_t row = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    Sampler& sampler = *plan[i].seq->sampler;
    if (block_of_[i] >= 0) {  // rows 0..k of [pending, d1..dk]: row j is judged once d1..dj are committed
      const std::span<const int32_t> block = spec_->block(static_cast<size_t>(block_of_[i]));
      for (size_t j = 0; j < block.size(); ++j, ++row)
        if (sampler.edits_logits()) sampler.logit_edits(block.subspan(1, j), row, vocab, edits_);
    } else {
      if (samples(plan[i], false) && sampler.edits_logits()) sampler.logit_edits({}, row, vocab, edits_);
      ++row;
    }
  }
}

void Engine::publish_stats() {
  std::lock_guard lock(mu_);
  if (prefix_) stats_.prefix = prefix_->stats();
  stats_.running = static_cast<int64_t>(scheduler_->running().size());
  stats_.waiting = static_cast<int64_t>(scheduler_->waiting().size());
  stats_.kv_blocks_used = scheduler_->committed_blocks();
  stats_.passed_over = scheduler_->passed_over();
  stats_.kv_blocks_allocated = runner_->kv().used_blocks();
  stats_.spec = spec_totals_;
  stats_.argmax_rows = argmax_rows_;
  stats_.top_rows = top_rows_;
  if (const StepGraphStats* g = model_->step_graph_stats()) stats_.step_graphs = *g;
}

}  // namespace ninfer
