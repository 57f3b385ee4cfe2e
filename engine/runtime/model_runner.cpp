#include "engine/runtime/model_runner.h"

#include <algorithm>

#include "engine/core/error.h"

namespace ninfer {

std::span<const float> ModelRunner::step(std::span<const SequenceStep> steps, const FeatureSpec* capture) {
  run(steps, capture, {});
  return logits_;
}

std::span<const int32_t> ModelRunner::step_argmax(std::span<const SequenceStep> steps, const FeatureSpec* capture,
                                                 std::span<const LogitEdit> edits) {
  run(steps, capture, {.argmax = true}, edits);
  return argmax_;
}

std::span<const float> ModelRunner::step_top(std::span<const SequenceStep> steps, int32_t k, const FeatureSpec* capture,
                                             std::span<const LogitEdit> edits) {
  if (k < 1) fail(ErrorKind::kInvalidArgument, "a step asking for each row's first {} pairs", k);
  run(steps, capture, {.top_k = k}, edits);
  return top_;
}

void ModelRunner::run(std::span<const SequenceStep> steps, const FeatureSpec* capture, LogitsForm form,
                      std::span<const LogitEdit> edits) {
  if (steps.empty()) fail(ErrorKind::kInvalidArgument, "model step without sequences");
  bool any_checkpoint = false;
  for (const auto& s : steps) {
    if (s.tokens.empty()) fail(ErrorKind::kInvalidArgument, "sequence {} brings no tokens", s.id);
    if (!s.checkpoint_slots.empty() && s.checkpoint_slots.size() != s.tokens.size())
      fail(ErrorKind::kInvalidArgument, "sequence {} brings {} tokens but {} checkpoint slots", s.id, s.tokens.size(),
           s.checkpoint_slots.size());
    any_checkpoint = any_checkpoint || !s.checkpoint_slots.empty();
    if (!kv_.reserve(s.id, s.start + static_cast<int64_t>(s.tokens.size())))
      fail(ErrorKind::kOutOfMemory, "KV cache full: sequence {} needs {} tokens, {} of {} blocks free", s.id,
           s.start + static_cast<int64_t>(s.tokens.size()), kv_.free_blocks(), kv_.total_blocks());
  }
  tokens_.clear(), positions_.clear(), q_start_.assign(1, 0), seq_len_.clear(), slots_.clear();
  kv_slots_.clear(), rows_.clear(), table_.clear(), checkpoints_.clear();
  int32_t max_blocks = 0;
  for (const auto& s : steps) max_blocks = std::max<int32_t>(max_blocks, static_cast<int32_t>(kv_.blocks(s.id).size()));
  for (const auto& s : steps) {
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    const int32_t row0 = static_cast<int32_t>(tokens_.size());
    for (int64_t i = 0; i < n; ++i) {
      tokens_.push_back(s.tokens[static_cast<size_t>(i)]);
      positions_.push_back(static_cast<int32_t>(s.start + i));
      kv_slots_.push_back(kv_.slot(s.id, s.start + i));
      if (any_checkpoint) checkpoints_.push_back(s.checkpoint_slots.empty() ? -1 : s.checkpoint_slots[static_cast<size_t>(i)]);
    }
    if (s.all_logits)
      for (int64_t i = 0; i < n; ++i) rows_.push_back(row0 + static_cast<int32_t>(i));
    else
      rows_.push_back(row0 + static_cast<int32_t>(n - 1));
    q_start_.push_back(static_cast<int32_t>(tokens_.size()));
    seq_len_.push_back(static_cast<int32_t>(s.start + n));
    slots_.push_back(s.state_row);
    const auto& blocks = kv_.blocks(s.id);
    table_.insert(table_.end(), blocks.begin(), blocks.end());
    table_.resize(table_.size() + static_cast<size_t>(max_blocks) - blocks.size(), 0);
  }
  ForwardBatch batch{tokens_, positions_, q_start_, seq_len_, slots_, table_, max_blocks, kv_slots_, rows_, checkpoints_};
  LogitsOut out{.edits = edits};
  if (form.argmax) {
    argmax_.resize(rows_.size());
    out.argmax = argmax_;
  } else if (form.top_k > 0) {
    top_.resize(rows_.size() * static_cast<size_t>(form.top_k) * 2);
    out.top = top_;
    out.top_k = form.top_k;
  } else {
    logits_.resize(rows_.size() * static_cast<size_t>(model_.config().vocab_size));
    out.rows = logits_;
  }
  FeatureCapture cap;
  if (capture != nullptr && !capture->empty()) {
    features_.resize(tokens_.size() * static_cast<size_t>(capture->width(model_.config().hidden_size)));
    cap = {capture, features_};
  } else {
    features_.clear();
  }
  if (ranks_) ranks_->forward(model_, batch, kv_, state_, out, cap);
  else model_.forward(batch, kv_, state_, out, cap);
}

}  // namespace ninfer
