#include "engine/constrain/grammar_constraint.h"

#include <algorithm>
#include <limits>

#include "engine/core/error.h"

namespace ninfer::constrain {

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
  if (state_.complete())
    for (int32_t id : options_.end_ids)
      if (id >= 0 && static_cast<size_t>(id) < grammar_->vocab().size()) allowed_.set(id);
  return allowed_;
}

void GrammarConstraint::mask(std::span<float> logits) {
  if (!started_) return;
  const TokenBits& ok = allowed();
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  bool any = false;
  const size_t words = ok.words.size();
  for (size_t w = 0; w < words; ++w) {
    const uint64_t bits = ok.words[w];
    any = any || bits != 0;
    if (bits == ~uint64_t{0}) continue;
    const size_t end = std::min(logits.size(), (w + 1) * 64);
    for (size_t id = w * 64; id < end; ++id)
      if (!((bits >> (id & 63)) & 1)) logits[id] = kMasked;
  }
  for (size_t id = words * 64; id < logits.size(); ++id) logits[id] = kMasked;  // ids past the tokenizer's
  if (!any) fail(ErrorKind::kInternal, "the output grammar allows no token at all after this output");
}

void GrammarConstraint::accept(int32_t id) {
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
}

}  // namespace ninfer::constrain
