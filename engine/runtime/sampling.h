// Owns per-request sampling: logit processors (penalties, temperature, top-k/top-p/min-p) and seeded draws.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/backend/logit_edit.h"
#include "engine/constrain/logit_constraint.h"
#include "engine/speculative/rejection_sampler.h"

namespace ninfer {

struct SamplingParams {
  bool greedy = false;               // argmax; also implied by temperature == 0
  float temperature = 1.0f;
  int32_t top_k = 0;                 // 0 = off
  float top_p = 1.0f;                // 1 = off
  float min_p = 0.0f;                // 0 = off
  float presence_penalty = 0.0f;     // OpenAI: over output tokens
  float frequency_penalty = 0.0f;    // OpenAI: over output tokens
  float repetition_penalty = 1.0f;   // HF/vLLM: over prompt and output tokens, 1 = off
  std::optional<uint64_t> seed;      // same seed → same tokens, alone or in a busy batch
  int32_t top_logprobs = 0;          // alternatives to report per token (0..20)
  bool logprobs = false;
  // OpenAI logit_bias: added to the logits before the penalties (after logprobs were taken); a bias of -100 or
  // less bans the token. One entry per id (the Sampler refuses a list naming an id twice).
  std::vector<std::pair<int32_t, float>> logit_bias;
};

struct SampledToken {
  int32_t id = 0;
  float logprob = 0.0f;  // log-softmax of the raw model logits (before any processor), when requested
  std::vector<std::pair<int32_t, float>> top;  // best `top_logprobs` alternatives, raw log-probabilities
};

// One request's sampler: owns its random stream and the token counts the penalties need.
class Sampler {
 public:
  // `fallback_seed` is used when params.seed is unset (the engine draws it per request).
  Sampler(const SamplingParams& params, uint64_t fallback_seed, std::span<const int32_t> prompt);

  // A constraint (not owned; it must outlive the sampler) masks every distribution after the raw logits were kept
  // for logprobs, and follows every recorded token: logprobs stay those of the model. One whose mask is a set of
  // banned ids (LogitConstraint::banned_ids: the think block's stop mask) is applied as logit edits.
  void set_constraint(LogitConstraint* constraint);

  // Picks the next token from `logits` ([vocab], modified in place) and records it for the penalties.
  SampledToken sample(std::span<float> logits);
  // Speculative verification of `draft` against these logits (modified in place): the same processed distribution
  // sample() would draw from, then rejection sampling with a one-hot proposal (greedy: accepted iff it is the
  // argmax). Returns the committed token (the draft, or its replacement), records it like sample(), and sets
  // `accepted`. Rows must be verified in order, so the penalties see every earlier committed token.
  SampledToken verify(std::span<float> logits, int32_t draft, bool& accepted);
  // Records a token that was appended without sampling (a forced token), for the penalties.
  void observe(int32_t id);

  // Greedy with nothing between the edited logits (logit_edits) and the argmax: no logprobs, constraint or
  // logit_bias (whose "every token banned" error needs the best value, not only its id; a greedy choice with those
  // takes one pair, candidates_needed). Such a sampler's choice is
  // the edited, masked logit row's first maximum, which the backend can make (Backend::edit_logits, argmax_rows)
  // without the row leaving it: then take_argmax / verify_argmax stand for sample / verify.
  bool plain_greedy() const;
  // sample() for a plain-greedy sampler, given the row's argmax.
  SampledToken take_argmax(int32_t argmax);
  // verify() for a plain-greedy sampler, given the row's argmax: the draft is accepted iff it is the argmax.
  SampledToken verify_argmax(int32_t argmax, int32_t draft, bool& accepted);
  // How many of the edited row's first (value, id) pairs (Backend::top_k_rows's order: by value, ties by the lower id)
  // this sampler's next choice needs, when nothing but that row's order and values matters: 1 for a greedy choice,
  // top_k for a top-k draw (temperature, min_p and top_p act on the top_k alone), 0 when it needs the whole row
  // (logprobs, a constraint that is no set of banned ids, or no top_k). The row is the logits after logit_edits
  // (logit_bias, the penalties, a constraint's bans), which a backend applies as the host would. Then sample_top /
  // verify_top stand for sample / verify.
  int32_t candidates_needed() const;
  // The edits this sampler makes to the row of its next choice (its constraint's banned ids, logit_bias, the
  // repetition, presence and frequency penalties), appended to `out` as row `row`, ids in [0, vocab) ascending, one
  // edit per id (none when it has no such processor). `ahead`: tokens observed before that choice is made (a
  // verification block's earlier drafts, which are committed before the row that follows them is judged).
  // distribution() applies the same edits on the host. Error(kInternal) for a sampler that needs its row
  // (candidates_needed() == 0 for its constraint).
  void logit_edits(std::span<const int32_t> ahead, int32_t row, int64_t vocab, std::vector<LogitEdit>& out);
  // Whether logit_edits can give any edit (a constraint, a logit_bias or a penalty).
  bool edits_logits() const;
  // sample() given the row's first `candidates_needed()` or more pairs, host f32 [k, 2] (value, id as an exact f32;
  // an id of −1 marks an empty slot): the same token, the same draw from the random stream, for a row without NaN.
  SampledToken sample_top(std::span<const float> pairs);
  // verify() given the row's first pairs, as sample_top.
  SampledToken verify_top(std::span<const float> pairs, int32_t draft, bool& accepted);
  // The distribution sample() draws from for these logits (modified in place): the constraint's mask, logit_bias, penalties, then temperature,
  // top-k, min-p, top-p. Greedy: the argmax alone. Valid until the next call on this sampler.
  TokenDist distribution(std::span<float> logits);

  const SamplingParams& params() const { return params_; }

 private:
  void see(int32_t id);  // the repetition penalty's prompt ∪ output set
  // logit_edits, with the constraint's bans when `bans` (else the caller masks with the constraint itself).
  void collect_edits(std::span<const int32_t> ahead, int32_t row, int64_t vocab, bool bans, std::vector<LogitEdit>& out);
  // The distribution over the first n candidates of order_ (sorted by value, values_ their logits), the row's
  // maximum being `mx`: temperature, the −inf candidates dropped, min_p, top_p.
  TokenDist weigh(size_t n, float mx);
  // The distribution of a plain sampler over the pairs (candidates_needed).
  TokenDist distribution_top(std::span<const float> pairs);

  SamplingParams params_;
  LogitConstraint* constraint_ = nullptr;
  bool constraint_bans_ = false;  // the constraint's mask is a set of banned ids (LogitConstraint::banned_ids)
  std::mt19937_64 rng_;
  std::unordered_map<int32_t, int32_t> output_counts_;
  std::vector<uint8_t> seen_;       // prompt ∪ output membership for the repetition penalty (by id)
  // The ids the processors touch whatever comes next, ascending: logit_bias, prompt ∪ output for the repetition
  // penalty, the output for presence/frequency. Kept sorted as tokens are observed, so a row's edits are a merge with
  // its few extra ids, not a sort of the whole set (a long prompt's thousands of ids, every row of every step).
  std::vector<int32_t> edit_base_;
  void touch(int32_t id);  // adds id to edit_base_
  std::vector<LogitEdit> edits_;    // scratch: logit_edits for distribution()
  std::vector<int32_t> edit_ids_;   // scratch: the ids logit_edits touches
  std::vector<int32_t> edit_bans_;  // scratch: the constraint's banned ids
  // Fills `raw` with the log-softmax inputs when logprobs are asked (before any processor touches the logits).
  void keep_raw(std::span<const float> logits);
  SampledToken finish(int32_t id);  // logprobs from raw_, then observe(id)
  SampledToken draw(const TokenDist& d);                                 // sample()'s draw from d, finished
  SampledToken judge(const TokenDist& d, int32_t draft, bool& accepted);  // verify()'s verdict on d, finished

  std::vector<int32_t> order_;  // scratch: candidate ids
  std::vector<float> values_;    // scratch: their logits
  std::vector<double> weights_;  // scratch: their weights
  std::vector<float> raw_;       // scratch: raw logits for logprobs
};

}  // namespace ninfer
