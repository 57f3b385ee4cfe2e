// Owns the engine loop: one thread that admits requests, runs batched steps on the model, samples, and
// reports tokens and timings; the thread-safe submit / cancel / stats API in front of it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "engine/artifact/artifact.h"
#include "engine/backend/backend.h"
#include "engine/backend/backend_factory.h"
#include "engine/backend/weight_store.h"
#include "engine/model/model.h"
#include "engine/parallel/gloo_group.h"
#include "engine/parallel/tp_ranks.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/linear_state.h"
#include "engine/runtime/model_runner.h"
#include "engine/runtime/prefix_cache.h"
#include "engine/runtime/request.h"
#include "engine/runtime/scheduler.h"
#include "engine/runtime/step_rows.h"
#include "engine/speculative/drafter.h"
#include "engine/speculative/spec_decoder.h"

namespace ninfer {

struct EngineOptions {
  int64_t max_context = 4096;       // prompt + output tokens of one sequence
  int64_t prefill_chunk = 2048;     // prompt tokens per step, over all prefilling sequences
  int32_t max_concurrency = 8;      // sequences running at once
  int64_t kv_capacity = 0;          // KV tokens in all; 0 = max_concurrency × max_context
  int64_t kv_block_size = 16;
  DType kv_dtype = DType::kF32;
  BackendKind backend = BackendKind::kCpu;  // where the model runs (auto: CUDA when built and a GPU is present)
  int device = 0;                   // CUDA device index (rank 0's under TP)
  std::vector<int> devices = {};    // CUDA under TP: one device per rank (empty: device, device + 1, …)
  int threads = 0;                  // CPU backend threads, 0 = all cores (under TP: shared out over the ranks)
  // Tensor-parallel ranks (docs/parallel.md). > 1 runs that many ranks as threads of this process (CPU ranks with a
  // share of the threads each; CUDA ranks on `devices`, over NCCL), each with its own KV cache / GDN state / scratch,
  // driven in lockstep by the one scheduler; rank 0's GDN state operations (checkpoints, prefix snapshots) are
  // mirrored on every rank. A drafter runs on rank 0 over the full weights.
  int tp = 1;
  // Multi-process TP (ninfer-serve --nnodes): the group this process is rank 0 of (one rank per process, its size is
  // `tp`); the other ranks are follower processes (run_tp_follower) that this engine drives step by step. nullptr =
  // the other ranks are threads of this process. On CUDA this process's rank runs on `device` (or the one entry of
  // `devices`); the collectives go through host memory over Gloo. Must outlive the engine.
  GlooGroup* process_group = nullptr;
  std::chrono::milliseconds join_timeout{std::chrono::minutes(5)};  // waiting for the follower processes to load
  // Called once, from the step that found it, when a follower process is lost (the group cannot step any more; every
  // later step fails at once): the app ends the server.
  std::function<void(const std::string& why)> on_group_lost = nullptr;
  Nvfp4Activations nvfp4_activations = Nvfp4Activations::kNvfp4;  // W4A4 or W4A16 for nvfp4 weights
  bool bf16_activations = false;  // bf16 weights on the CPU: activations rounded to bf16 (CpuBackendOptions)
  // Set: every op of every rank's backend is timed into it (ProfilingBackend; benchmarks). Op graphs are then off.
  std::shared_ptr<OpProfile> op_profile = nullptr;
  // Decode and verification steps of the target model replayed as recorded op graphs (CUDA graphs,
  // docs/cuda-graphs.md), on a backend that records them, at TP1. Off until verified on a GPU.
  bool step_graphs = false;
  bool greedy = false;              // engine-wide greedy override
  size_t max_waiting = 1024;        // queued requests beyond this are refused (kQueueFull)
  // Speculative decoding (docs/speculative.md): empty = none. Built once the backend exists; every decoding
  // sequence then verifies up to draft_tokens drafted tokens per step.
  DrafterFactory drafter = nullptr;
  int32_t draft_tokens = 3;
  // Prefix reuse (docs/prefix-cache.md): prompts start from the longest cached whole-block prefix. Not combined with
  // speculative decoding yet (the drafters keep their own caches): with a drafter it is off, and prefix_reuse() says so.
  bool prefix_cache = false;
  int32_t prefix_snapshots = 0;     // GDN state snapshots the cache may hold (hybrid models); 0 = 2 × max_concurrency
  // The ids the model may produce (docs/api.md, "Padded vocabularies"): empty = every id below vocab_size; else
  // vocab_size flags, 0 for an id the tokenizer lacks (a padded embedding row). Such ids get a −inf logit before every
  // sampling and speculative verification, so they are never produced nor listed in logprobs; prompts holding them
  // are refused.
  std::vector<uint8_t> output_ids = {};
  // Steps whose every sampled row is a plain greedy choice (no logprobs, logit_bias, penalties or constraint) take
  // the rows' argmax on the backend and bring back only the ids (Backend::argmax_rows); steps whose every sampled row
  // is plain greedy or a plain top-k draw with top_k ≤ kTopKRowsMax bring back only each row's first top_k (value, id)
  // pairs (Backend::top_k_rows; Sampler::candidates_needed). Off: every row comes back whole and the host chooses.
  // The same tokens and the same random draws either way (rows without NaN).
  bool backend_choice = true;
};

// The limits the engine builds its drafter with, for a context of max_context tokens (the memory plan asks for other
// contexts when it searches for the largest that fits).
DrafterLimits drafter_limits(const EngineOptions& options, int64_t max_context);

// GDN state snapshot rows the prefix cache of an engine with these options holds (0 without prefix reuse, with a
// drafter, or for a model without linear-attention layers).
int64_t prefix_snapshot_rows(const ModelConfig& config, const EngineOptions& options);
// Linear-state rows prefix reuse adds, as the engine allocates them and the memory plan counts them: one boundary
// row per sequence slot, then the snapshot rows (0 when there are no snapshot rows).
int64_t prefix_state_rows(const ModelConfig& config, const EngineOptions& options);

struct EngineStats {
  int64_t waiting = 0;
  int64_t running = 0;
  int64_t kv_blocks_used = 0;   // committed to admitted sequences
  int64_t kv_blocks_allocated = 0;  // off the KV free list: held by sequences or the prefix cache
  int64_t kv_blocks_total = 0;
  // Sequence-steps a request was passed over because its constraint's next mask was still being walked by a mask
  // worker while other requests could run (docs/constrained-decoding.md).
  int64_t passed_over = 0;
  SpecStats spec;               // speculative decoding totals since the engine started (all zero without a drafter)
  // Logit rows whose greedy choice the backend made, handing back the id alone instead of the row
  // (EngineOptions::backend_choice), since the engine started.
  int64_t argmax_rows = 0;
  // Logit rows handed back as their first top_k (value, id) pairs instead of the row (EngineOptions::backend_choice).
  int64_t top_rows = 0;
  PrefixCacheStats prefix;      // all zero without prefix reuse
  StepGraphStats step_graphs;   // rank 0's op graphs (all zero with step_graphs off or unsupported)
};

class Engine {
 public:
  // `artifact` must outlive the engine (weights are used in place from its mapping).
  Engine(const Artifact& artifact, const ModelConfig& config, const EngineOptions& options);
  ~Engine();  // finishes every request as cancelled and joins the loop
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Thread-safe. Validates and queues the request; on refusal nothing is queued and the observer is
  // never called. On acceptance the observer gets tokens and exactly one on_finish, possibly before
  // submit() returns.
  SubmitOutcome submit(EngineRequest request, std::shared_ptr<RequestObserver> observer);
  // Thread-safe, idempotent; unknown or finished ids are ignored. The sequence's KV blocks and state slot
  // are freed at the start of the next step.
  void cancel(RequestId id);
  EngineStats stats() const;

  const ModelConfig& config() const { return config_; }
  const EngineOptions& options() const { return options_; }
  // KV tokens the pool holds (kv_capacity rounded up to whole blocks); the bytes are in plan_memory().
  int64_t kv_tokens() const { return kv_->capacity_tokens(); }
  std::string backend_name() const { return backend_->name(); }
  // Whether prompts reuse cached prefixes (EngineOptions::prefix_cache without a drafter).
  bool prefix_reuse() const { return prefix_ != nullptr; }
  // Prefix-cache GDN snapshot rows (0 without prefix reuse or for a model without linear-attention layers).
  int64_t prefix_snapshot_rows() const { return ninfer::prefix_snapshot_rows(config_, options_); }

 private:
  void loop();
  void step();
  void publish_stats();  // engine thread: copies the scheduler's counts into stats_
  void finish(std::unique_ptr<Sequence> seq, FinishReason reason, std::string error = {});
  void append_output(Sequence& seq, const SampledToken& token, std::vector<OutputToken>& out, bool forced);
  // How the step of `plan` asks for its logit rows (EngineOptions::backend_choice): their argmax when every row it
  // samples from is a plain greedy choice, their first top_k pairs when every one needs only those
  // (Sampler::candidates_needed), else the rows.
  LogitsForm logits_form(const std::vector<ScheduledChunk>& plan) const;
  // The samplers' logit edits of the step's sampled rows (Sampler::logit_edits; a verification block's row j after
  // its drafts 1..j), numbered as the step's logit rows, into edits_.
  void collect_edits(const std::vector<ScheduledChunk>& plan);
  // Hands tokens to the request's observer; whatever it throws ends that request alone: returns the error then.
  std::optional<std::string> deliver(Sequence& seq, std::span<const OutputToken> tokens);
  // Appends a sampled token, then whatever the controller forces after it (setting `forced`), as plain decode does;
  // returns why the sequence ends, if it does.
  std::optional<FinishReason> commit(Sequence& seq, const SampledToken& token, std::vector<OutputToken>& out,
                                     bool& forced);
  // Drafts for every decoding sequence with one pending token and room for a draft; marks their plan entries.
  void draft(const std::vector<ScheduledChunk>& plan);
  // Commits the verified block of plan entry `chunk` from its logits rows, rolls KV and GDN state back to the
  // committed rows, and returns why the sequence ends, if it does.
  std::optional<FinishReason> commit_block(Sequence& s, size_t chunk, const StepRows& rows,
                                           std::vector<OutputToken>& out);
  // Prefix reuse: at admission, start `s` from the longest cached prefix of its prompt; after a step that brought
  // `s` from `begin` to s.computed, record what the cache should keep; when `s` ends, hand its blocks to the cache.
  void reuse_prefix(Sequence& s);
  void note_progress(Sequence& s, int64_t begin);
  void keep_prefix(const Sequence& s);
  int32_t boundary_row(const Sequence& s) const { return state_->extra_row(s.state_slot); }

  ModelConfig config_;
  EngineOptions options_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<WeightStore> weights_;  // device copies of the weights (none on the CPU backend); outlives model_
  std::unique_ptr<TpFollowers> tp_;       // ranks 1..tp−1 under tensor parallelism (null at TP1); outlives model_
  std::unique_ptr<Model> model_;
  std::unique_ptr<KvCache> kv_;
  std::unique_ptr<LinearStateCache> state_;
  std::unique_ptr<PrefixCache> prefix_;   // null without prefix reuse
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<Scheduler> scheduler_;  // engine thread only
  std::unique_ptr<SpecDecoder> spec_;     // engine thread only; null without a drafter

  // Engine-thread scratch reused between steps.
  std::vector<SequenceStep> steps_;
  std::vector<float> row_;
  std::vector<LogitEdit> edits_;  // collect_edits
  std::vector<DraftRequest> draft_reqs_;
  std::vector<int32_t> block_of_;  // per plan entry: index of its drafted block, −1 = plain decode / prefill
  int64_t argmax_rows_ = 0;          // EngineStats::argmax_rows
  int64_t top_rows_ = 0;             // EngineStats::top_rows
  SpecStats spec_totals_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<std::unique_ptr<Sequence>> inbox_;  // guarded by mu_
  std::vector<RequestId> cancels_;                // guarded by mu_
  EngineStats stats_;                             // guarded by mu_, refreshed every step
  bool stopping_ = false;                         // guarded by mu_
  std::atomic<RequestId> next_id_{1};
  std::thread thread_;
};

}  // namespace ninfer
