// Owns grammar-constrained decoding for one request: a compiled grammar shared across requests (grammar + its token
// masks over one vocabulary) and the per-request LogitConstraint that walks it token by token.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/constrain/logit_constraint.h"
#include "engine/constrain/token_masks.h"

namespace ninfer::constrain {

// A grammar with its mask cache. Shared by every request that uses the same grammar; thread-safe.
class CompiledGrammar {
 public:
  CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenVocabulary> vocab)
      : grammar_(std::move(grammar)), vocab_(std::move(vocab)), masks_(grammar_, *vocab_) {}
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  const Grammar& grammar() const { return grammar_; }
  const TokenVocabulary& vocab() const { return *vocab_; }
  GrammarMasks& masks() { return masks_; }

 private:
  Grammar grammar_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  GrammarMasks masks_;
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
  StackSet state_, next_, scratch_;
  TokenBits allowed_;
};

}  // namespace ninfer::constrain
