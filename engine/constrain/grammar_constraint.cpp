#include "engine/constrain/grammar_constraint.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <limits>

#include <spdlog/spdlog.h>

#include "engine/core/error.h"

namespace ninfer::constrain {

void CompiledGrammar::precompute_async(std::string name, MaskWorkers& workers) {
  {
    std::lock_guard lock(mu_);
    if (started_) return;
    started_ = precomputing_ = queued_ = true;
    workers_ = &workers;
    name_ = std::move(name);
    queued_at_ = std::chrono::steady_clock::now();
  }
  workers.add(weak_from_this());
}

void CompiledGrammar::prefetch(const StackSet& state) {
  {
    std::lock_guard lock(mu_);
    if (!workers_) return;
  }
  if (!masks_.want(state)) return;
  MaskWorkers* workers = nullptr;
  bool queued = false;
  {
    std::lock_guard lock(mu_);
    queued = queued_;
    queued_ = true;
    workers = workers_;
  }
  if (queued) workers->promote(weak_from_this());  // its next turn takes the wanted masks first
  else workers->add(weak_from_this(), /*first=*/true);
}

bool CompiledGrammar::ready(const StackSet& state) {
  {
    std::lock_guard lock(mu_);
    if (!workers_ || workers_->threads() == 0) return true;
  }
  if (masks_.ready(state)) return true;
  prefetch(state);
  return false;
}

bool CompiledGrammar::precompute_step(const std::function<bool()>& cancelled) {
  PrecomputeStats st;
  {
    std::lock_guard lock(mu_);
    st = stats_;
  }
  bool more = false;
  std::string failure;
  try {
    more = masks_.precompute_step(st, cancelled);
  } catch (const std::exception& e) {
    // The same error comes back to the request when its masks are computed at run time; nothing is lost.
    failure = e.what();
  }
  std::lock_guard lock(mu_);
  if (precomputing_) st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - queued_at_).count();
  stats_ = st;
  if (more) return true;
  if (failure.empty() && !st.stopped && masks_.wanted()) return true;  // prefetched while this turn ended
  queued_ = false;
  if (!precomputing_) return false;  // a prefetch turn
  precomputing_ = false;
  ended_.notify_all();
  if (!failure.empty())
    spdlog::warn("grammar {}: precomputing its token masks failed ({}); they are computed as they are needed", name_,
                 failure);
  else if (!st.stopped)  // stopped: the grammar is being dropped, or the process is ending
    spdlog::info("grammar {}: {} token-mask walks ({} along reachable stacks first) over {} positions in {:.0f} ms{}",
                 name_, st.walks, st.reach_walks, st.positions, 1e3 * st.seconds,
                 st.left_to_runtime ? fmt::format(" ({} positions left to run time)", st.left_to_runtime) : "");
  return false;
}

bool CompiledGrammar::precomputing() const {
  std::lock_guard lock(mu_);
  return precomputing_;
}

bool CompiledGrammar::wait_precomputed(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return ended_.wait_for(lock, timeout, [&] { return !precomputing_; });
}

PrecomputeStats CompiledGrammar::precompute_stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

GrammarConstraint::GrammarConstraint(std::shared_ptr<CompiledGrammar> grammar, GrammarConstraintOptions options)
    : grammar_(std::move(grammar)),
      options_(std::move(options)),
      started_(!options_.start_after.has_value()),
      state_(grammar_->masks().matcher().start()),
      allowed_(grammar_->vocab().size()) {}

const TokenBits& GrammarConstraint::allowed() {
  if (ended_) {
    std::fill(allowed_.words.begin(), allowed_.words.end(), 0);
    return allowed_;
  }
  grammar_->masks().allowed(state_, allowed_);
  keep_in_time();
  if (state_.complete())
    for (int32_t id : options_.end_ids)
      if (id >= 0 && static_cast<size_t>(id) < grammar_->vocab().size()) allowed_.set(id);
  return allowed_;
}

// Near the output limit: a token t is kept when the bytes that still complete the sentence after it fit the tokens
// left after it, less one for the end token (shortest(t) ≤ left − 2). Far from the limit (more than completion_window()
// tokens beyond the shortest completion) nothing is checked. The costs of a state's tokens come from the grammar's
// CompletionCosts (one sorted vocabulary walk per state, kept for a string's state met token after token).
void GrammarConstraint::keep_in_time() {
  if (limit_ <= 0) return;
  const int64_t left = limit_ - produced_;  // this token included
  if (left <= 1 && state_.complete()) {     // the last slot of a complete sentence is the end token's
    std::fill(allowed_.words.begin(), allowed_.words.end(), 0);
    return;
  }
  const int64_t now = grammar_->masks().matcher().shortest_completion(state_);
  if (left - 2 >= now + completion_window(*grammar_)) return;  // far from the limit: no check
  const auto costs = grammar_->completion_costs().of(state_, allowed_);
  const auto& by_cost = costs->by_cost;
  // Ending now is an option where the state is complete (end tokens, added by the caller).
  int64_t best = state_.complete() ? 0 : GrammarMatcher::kUnreachable;
  if (!by_cost.empty()) best = std::min<int64_t>(best, by_cost.front().first);
  // Keep what fits; when nothing does (the limit came too early), the tokens that come closest.
  const int64_t fits = std::max<int64_t>(left - 2, best);
  for (auto it = by_cost.rbegin(); it != by_cost.rend() && static_cast<int64_t>(it->first) > fits; ++it)
    allowed_.words[static_cast<size_t>(it->second) >> 6] &= ~(uint64_t{1} << (it->second & 63));
}

int64_t completion_window(CompiledGrammar& grammar) {
  const GrammarMatcher& m = grammar.masks().matcher();
  return static_cast<int64_t>(grammar.vocab().longest()) + 2 * static_cast<int64_t>(m.largest_remainder());
}

// Before the grammar starts (reasoning): the output may not end there, and near the limit the start token is forced,
// so that the answer still fits.
void GrammarConstraint::mask_before_start(std::span<float> logits) {
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  for (int32_t id : options_.end_ids)
    if (id >= 0 && static_cast<size_t>(id) < logits.size()) logits[static_cast<size_t>(id)] = kMasked;
  if (limit_ <= 0 || !options_.start_after) return;
  const int64_t left = limit_ - produced_;
  const int64_t needed = grammar_->masks().matcher().shortest_completion(state_) + completion_window(*grammar_) + 2;
  if (left > needed) return;
  const auto start = static_cast<size_t>(*options_.start_after);
  for (size_t id = 0; id < logits.size(); ++id)
    if (id != start) logits[id] = kMasked;
}

void GrammarConstraint::mask(std::span<float> logits) {
  if (!started_) {
    mask_before_start(logits);
    return;
  }
  if (!apply_token_mask(allowed(), logits))
    fail(ErrorKind::kInternal, "the output grammar allows no token at all after this output");
}

bool apply_token_mask(const TokenBits& allowed, std::span<float> logits) {
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  float* x = logits.data();
  const size_t n = logits.size();
  const size_t words = std::min(allowed.words.size(), (n + 63) / 64);
  uint64_t any = 0;
  for (size_t w = 0; w < words; ++w) {
    const uint64_t bits = allowed.words[w];
    any |= bits;
    if (bits == ~uint64_t{0}) continue;
    const size_t base = w * 64, len = std::min<size_t>(64, n - base);
    if (bits == 0) {
      std::fill(x + base, x + base + len, kMasked);
      continue;
    }
    // A mixed word: writes for the fewer of its two kinds. Mostly allowed: mask the ruled-out ids one by one; mostly
    // ruled out: keep the allowed values aside, fill, put them back.
    const uint64_t valid = len == 64 ? ~uint64_t{0} : (uint64_t{1} << len) - 1;
    const uint64_t out = ~bits & valid;
    if (std::popcount(out) <= 32) {
      for (uint64_t z = out; z != 0; z &= z - 1) x[base + static_cast<size_t>(std::countr_zero(z))] = kMasked;
      continue;
    }
    float kept[64];
    int n = 0;
    for (uint64_t b = bits & valid; b != 0; b &= b - 1) kept[n++] = x[base + static_cast<size_t>(std::countr_zero(b))];
    std::fill(x + base, x + base + len, kMasked);
    n = 0;
    for (uint64_t b = bits & valid; b != 0; b &= b - 1) x[base + static_cast<size_t>(std::countr_zero(b))] = kept[n++];
  }
  if (words * 64 < n) std::fill(x + words * 64, x + n, kMasked);  // ids past the tokenizer's
  return any != 0;
}

void GrammarConstraint::accept(int32_t id) {
  ++produced_;
  if (!started_) {
    started_ = options_.start_after && id == *options_.start_after;
    return;
  }
  if (ended_) fail(ErrorKind::kInternal, "output grammar: token {} came after the output ended", id);
  if (std::find(options_.end_ids.begin(), options_.end_ids.end(), id) != options_.end_ids.end()) {
    if (!state_.complete())
      fail(ErrorKind::kInternal, "output grammar: the output ended (token {}) before the grammar was complete", id);
    ended_ = true;
    return;
  }
  const TokenVocabulary& vocab = grammar_->vocab();
  if (!vocab.eligible(id))
    fail(ErrorKind::kInternal, "output grammar: token {} is a control token or no token of the vocabulary", id);
  const GrammarMatcher& m = grammar_->masks().matcher();
  for (char c : vocab.bytes(id)) {
    if (!m.advance(state_, static_cast<uint8_t>(c), next_))
      fail(ErrorKind::kInternal, "output grammar: token {} ({:?}) does not continue the output", id, vocab.bytes(id));
    std::swap(state_, next_);
  }
  grammar_->prefetch(state_);  // walked by a worker while the model computes the next step
}

}  // namespace ninfer::constrain
