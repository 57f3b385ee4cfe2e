// Owns grammar-constrained decoding for one request: a compiled grammar shared across requests (grammar + its token
// masks over one vocabulary) and the per-request LogitConstraint that walks it token by token.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/constrain/completion_costs.h"
#include "engine/constrain/logit_constraint.h"
#include "engine/constrain/mask_workers.h"
#include "engine/constrain/token_masks.h"

namespace ninfer::constrain {

// A grammar with its mask cache. Shared by every request that uses the same grammar; thread-safe.
//
// precompute_async() queues the grammar on a pool of mask workers (MaskWorkers), which walk its suffix masks one at a
// time in the order a sentence reaches them, then the rest (GrammarMasks::precompute_step). Requests use the grammar
// at once: a mask the worker has walked comes from the cache, one it has not yet is walked by allowed() on the
// engine thread, in that step (or waited for, when the worker is walking it just then). Masks are the same either way.
// prefetch() puts a request's next state first in the worker's line, so that its walks overlap the model's step;
// ready() tells the engine whether a state's mask still needs a walk, so that it can pass over that request for a step
// (the rest of the batch goes on) while the worker walks it.
class CompiledGrammar : public std::enable_shared_from_this<CompiledGrammar> {
 public:
  CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenVocabulary> vocab)
      : grammar_(std::move(grammar)),
        vocab_(std::move(vocab)),
        masks_(grammar_, *vocab_),
        completion_costs_(masks_.matcher(), *vocab_) {}
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  const Grammar& grammar() const { return grammar_; }
  const TokenVocabulary& vocab() const { return *vocab_; }
  GrammarMasks& masks() { return masks_; }
  // What each allowed token leaves to complete, per state (ending in time near an output limit).
  CompletionCosts& completion_costs() { return completion_costs_; }

  // Queues the grammar on `workers` (once; later calls do nothing). The grammar must be owned by a shared_ptr; the
  // workers hold it by weak reference, and must outlive it (prefetch() reaches them). `name` labels its log lines.
  void precompute_async(std::string name, MaskWorkers& workers = MaskWorkers::shared());
  // One worker turn: the next suffix-mask walk. False once the precomputation has ended (done, failed or cancelled)
  // and nothing prefetched is left.
  bool precompute_step(const std::function<bool()>& cancelled);
  // Asks the workers to walk what `state`'s mask needs before anything else (a request's next state); nothing when
  // precompute_async() was never called or the mask needs no walk. Cheap; called on the engine thread.
  void prefetch(const StackSet& state);
  // Whether `state`'s mask can be made now without a vocabulary walk on the caller's thread. When not, and a worker
  // thread serves this grammar, its walks are asked for first (prefetch()) and the answer is false; with no worker
  // thread to ask (precompute_async() never called, a pool of none), true: the caller walks. Cheap; engine thread.
  bool ready(const StackSet& state);
  // Whether the precomputation was asked for and has not ended.
  bool precomputing() const;
  // Waits up to `timeout` for the precomputation to end; returns !precomputing().
  bool wait_precomputed(std::chrono::milliseconds timeout) const;
  // What the worker has done so far (its seconds: from precompute_async() to the last walk).
  PrecomputeStats precompute_stats() const;

 private:
  Grammar grammar_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  GrammarMasks masks_;
  CompletionCosts completion_costs_;
  mutable std::mutex mu_;
  mutable std::condition_variable ended_;
  bool started_ = false, precomputing_ = false;  // guarded by mu_
  bool queued_ = false;                          // in the workers' queue or turn; guarded by mu_
  MaskWorkers* workers_ = nullptr;               // precompute_async()'s; guarded by mu_
  std::string name_;                             // guarded by mu_
  std::chrono::steady_clock::time_point queued_at_;  // guarded by mu_
  PrecomputeStats stats_;                         // guarded by mu_
};

// The margin near an output limit inside which GrammarConstraint checks every allowed token against the tokens left:
// the longest token plus twice the largest remainder one choice can open (a margin for the bytes a single token can
// add to what is owed, not a proof).
int64_t completion_window(CompiledGrammar& grammar);

struct GrammarConstraintOptions {
  // Tokens that end the output (EOS, <|im_end|>): allowed exactly where the grammar is complete.
  std::vector<int32_t> end_ids;
  // The grammar starts after this token was output (e.g. </think> when the prompt opened a reasoning block); before
  // it nothing is masked. Unset: from the first output token.
  std::optional<int32_t> start_after;
};

class GrammarConstraint final : public LogitConstraint {
 public:
  GrammarConstraint(std::shared_ptr<CompiledGrammar> grammar, GrammarConstraintOptions options);

  // With an output limit, the output ends in time: near the limit, only tokens after which the shortest completion
  // (in bytes: one token covers at least one byte) and the end token still fit are allowed. Before the grammar starts
  // (reasoning), end tokens are ruled out, and near the limit the start token (</think>) is forced.
  void start(int64_t max_output_tokens) override { limit_ = max_output_tokens; }
  // False while the next state's mask needs a vocabulary walk a worker can do (CompiledGrammar::ready).
  bool ready() override { return !started_ || ended_ || grammar_->ready(state_); }
  void mask(std::span<float> logits) override;
  void accept(int32_t id) override;

  bool started() const { return started_; }
  // The output so far is a complete sentence of the grammar.
  bool complete() const { return started_ && state_.complete(); }
  // The tokens allowed next (valid until the next call).
  const TokenBits& allowed();

 private:
  std::shared_ptr<CompiledGrammar> grammar_;
  GrammarConstraintOptions options_;
  bool started_;
  bool ended_ = false;  // an end token was accepted
  int64_t limit_ = 0;   // the output limit (0: none known)
  int64_t produced_ = 0;  // output tokens so far (reasoning included)
  void keep_in_time();
  void mask_before_start(std::span<float> logits);
  StackSet state_, next_;
  TokenBits allowed_;
};

// Sets logits[id] to -inf for every id not in `allowed` (and every id past its size); returns whether any is allowed.
// One pass over whole 64-token words: a word allowing nothing is filled, one allowing all is skipped, the rest are
// selected branch-free.
bool apply_token_mask(const TokenBits& allowed, std::span<float> logits);

}  // namespace ninfer::constrain
