#include "engine/runtime/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/core/error.h"

namespace ninfer {

namespace {

// log-softmax value of logits[id] and the best k alternatives, from the raw logits.
void fill_logprobs(std::span<const float> logits, int32_t id, int32_t k, SampledToken& out) {
  float mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - mx));
  const float lse = mx + static_cast<float>(std::log(sum));
  out.logprob = logits[static_cast<size_t>(id)] - lse;
  if (k <= 0) return;
  std::vector<int32_t> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0);
  const size_t kk = std::min<size_t>(static_cast<size_t>(k), idx.size());
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(kk), idx.end(), [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
           (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
  });
  for (size_t i = 0; i < kk; ++i) {
    const float l = logits[static_cast<size_t>(idx[i])];
    if (l == -std::numeric_limits<float>::infinity()) break;  // an id the engine masked (never produced)
    out.top.emplace_back(idx[i], l - lse);
  }
}

// Greedy: the argmax, asked for outright or by a temperature of 0.
bool is_greedy(const SamplingParams& p) { return p.greedy || p.temperature <= 0.0f; }

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

constexpr const char* kAllBanned = "no token is left to choose: logit_bias bans every token the output allows";

}  // namespace

Sampler::Sampler(const SamplingParams& params, uint64_t fallback_seed, std::span<const int32_t> prompt)
    : params_(params), rng_(params.seed.value_or(fallback_seed)) {
  // By id, one entry each: logit_edits looks an id up, and two biases of one id would be two additions.
  std::sort(params_.logit_bias.begin(), params_.logit_bias.end());
  for (size_t i = 1; i < params_.logit_bias.size(); ++i)
    if (params_.logit_bias[i].first == params_.logit_bias[i - 1].first)
      fail(ErrorKind::kInvalidArgument, "logit_bias names token id {} twice", params_.logit_bias[i].first);
  for (const auto& [id, bias] : params_.logit_bias) edit_base_.push_back(id);  // sorted, distinct
  if (params_.repetition_penalty != 1.0f)
    for (int32_t id : prompt) see(id);
}

void Sampler::touch(int32_t id) {
  const auto at = std::lower_bound(edit_base_.begin(), edit_base_.end(), id);
  if (at == edit_base_.end() || *at != id) edit_base_.insert(at, id);
}

void Sampler::see(int32_t id) {
  if (id < 0) return;
  if (id >= static_cast<int32_t>(seen_.size())) seen_.resize(static_cast<size_t>(id) + 1, 0);
  if (!seen_[static_cast<size_t>(id)]) touch(id);
  seen_[static_cast<size_t>(id)] = 1;
}

void Sampler::observe(int32_t id) {
  if (constraint_) constraint_->accept(id);
  if (output_counts_[id]++ == 0 && (params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f)) touch(id);
  if (params_.repetition_penalty != 1.0f) see(id);
}

void Sampler::set_constraint(LogitConstraint* constraint) {
  constraint_ = constraint;
  edit_bans_.clear();
  constraint_bans_ = constraint != nullptr && constraint->banned_ids({}, edit_bans_);
}

bool Sampler::edits_logits() const {
  return constraint_ != nullptr || !params_.logit_bias.empty() || params_.repetition_penalty != 1.0f ||
         params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f;
}

void Sampler::logit_edits(std::span<const int32_t> ahead, int32_t row, int64_t vocab, std::vector<LogitEdit>& out) {
  if (constraint_ && !constraint_bans_)
    fail(ErrorKind::kInternal, "logit edits of a sampler whose constraint is no set of banned ids");
  collect_edits(ahead, row, vocab, /*bans=*/true, out);
}

void Sampler::collect_edits(std::span<const int32_t> ahead, int32_t row, int64_t vocab, bool bans,
                            std::vector<LogitEdit>& out) {
  const float rp = params_.repetition_penalty, pp = params_.presence_penalty, fp = params_.frequency_penalty;
  const bool counts = pp != 0.0f || fp != 0.0f;
  std::vector<int32_t>& banned = edit_bans_;
  banned.clear();
  if (bans && constraint_ && !constraint_->banned_ids(ahead, banned))
    fail(ErrorKind::kInternal, "a constraint whose mask was a set of banned ids is no longer one");
  std::sort(banned.begin(), banned.end());
  // edit_base_ (sorted) merged with this row's few extra ids: the constraint's bans and the tokens ahead.
  std::vector<int32_t>& ids = edit_ids_;
  ids.assign(edit_base_.begin(), edit_base_.end());
  const auto middle = static_cast<std::ptrdiff_t>(ids.size());
  ids.insert(ids.end(), banned.begin(), banned.end());
  if (rp != 1.0f || counts) ids.insert(ids.end(), ahead.begin(), ahead.end());
  std::sort(ids.begin() + middle, ids.end());
  std::inplace_merge(ids.begin(), ids.begin() + middle, ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab) continue;
    LogitEdit e{.row = row, .col = id};
    const auto b = std::lower_bound(params_.logit_bias.begin(), params_.logit_bias.end(), std::pair(id, -INFINITY));
    if (b != params_.logit_bias.end() && b->first == id) e.add = b->second <= -100.0f ? -INFINITY : b->second;
    if (std::binary_search(banned.begin(), banned.end(), id)) e.add = -INFINITY;  // masked before the bias: stays −inf
    const int32_t later = static_cast<int32_t>(std::count(ahead.begin(), ahead.end(), id));
    const bool seen = static_cast<size_t>(id) < seen_.size() && seen_[static_cast<size_t>(id)];
    if (rp != 1.0f && (seen || later > 0)) e.scale = rp;
    if (counts) {
      const auto c = output_counts_.find(id);
      const int32_t n = (c == output_counts_.end() ? 0 : c->second) + later;
      if (n > 0) e.sub = pp + fp * static_cast<float>(n);
    }
    out.push_back(e);
  }
}

TokenDist Sampler::distribution(std::span<float> logits) {
  if (constraint_ && !constraint_bans_) constraint_->mask(logits);
  edits_.clear();
  collect_edits({}, 0, static_cast<int64_t>(logits.size()), constraint_bans_, edits_);
  for (const LogitEdit& e : edits_) {
    float& v = logits[static_cast<size_t>(e.col)];
    v = apply_logit_edit(v, e.add, e.scale, e.sub);
  }
  // (The penalties keep −inf and a finite logit finite, so this is the check right after the bias.)
  constexpr float kBanned = -std::numeric_limits<float>::infinity();
  if ((constraint_ || !params_.logit_bias.empty()) &&
      std::all_of(logits.begin(), logits.end(), [&](float x) { return x == kBanned; }))
    fail(ErrorKind::kInvalidArgument, kAllBanned);
  if (is_greedy(params_)) {
    order_.assign(1, argmax(logits));
    weights_.assign(1, 1.0);
    return {order_, weights_, 1.0};
  }
  const float mx = *std::max_element(logits.begin(), logits.end());
  // Candidates sorted by logit (ties by id, so the order is deterministic).
  order_.resize(logits.size());
  std::iota(order_.begin(), order_.end(), 0);
  size_t n = order_.size();
  auto by_logit = [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
           (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
  };
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
    n = static_cast<size_t>(params_.top_k);
    std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(n), order_.end(), by_logit);
  } else {
    std::sort(order_.begin(), order_.end(), by_logit);
  }
  values_.resize(n);
  for (size_t i = 0; i < n; ++i) values_[i] = logits[static_cast<size_t>(order_[i])];
  return weigh(n, mx);
}

TokenDist Sampler::weigh(size_t n, float mx) {
  const float inv_t = 1.0f / params_.temperature;
  // Masked ids (−inf, EngineOptions::output_ids) sort last and are no candidates at all.
  while (n > 1 && values_[n - 1] == -std::numeric_limits<float>::infinity()) --n;
  std::vector<double>& p = weights_;
  p.resize(n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += p[i] = std::exp(static_cast<double>((values_[i] - mx) * inv_t));
  for (double& v : p) v /= sum;
  // min_p: drop tokens below min_p × the top probability.
  if (params_.min_p > 0.0f) {
    const double floor = params_.min_p * p[0];
    size_t keep = 1;
    while (keep < n && p[keep] >= floor) ++keep;
    n = keep;
  }
  // top_p: the smallest prefix whose mass reaches top_p.
  if (params_.top_p < 1.0f) {
    double mass = 0;
    size_t keep = 0;
    while (keep < n) {
      mass += p[keep++];
      if (mass >= params_.top_p) break;
    }
    n = std::max<size_t>(keep, 1);
  }
  double total = 0;
  for (size_t i = 0; i < n; ++i) total += p[i];
  return {std::span(order_).first(n), std::span(p).first(n), total};
}

int32_t Sampler::candidates_needed() const {
  const SamplingParams& p = params_;
  if (p.logprobs || p.top_logprobs > 0 || (constraint_ != nullptr && !constraint_bans_)) return 0;
  return is_greedy(p) ? 1 : std::max(p.top_k, 0);
}

TokenDist Sampler::distribution_top(std::span<const float> pairs) {
  const int32_t need = candidates_needed();
  if (need < 1) fail(ErrorKind::kInternal, "sampling from a row's first pairs with a sampler that needs the row");
  if (pairs.size() % 2 != 0 || pairs.size() / 2 < static_cast<size_t>(need))
    fail(ErrorKind::kInternal, "sampling from {} floats of pairs, {} pairs needed", pairs.size(), need);
  // The pairs are the row's order already; an empty slot (id −1) only follows every entry of a short row.
  size_t n = 0;
  order_.clear(), values_.clear();
  while (n < static_cast<size_t>(need) && pairs[2 * n + 1] >= 0.0f) {
    values_.push_back(pairs[2 * n]);
    order_.push_back(static_cast<int32_t>(pairs[2 * n + 1]));
    ++n;
  }
  if (n == 0) fail(ErrorKind::kInternal, "sampling from pairs that hold no entry");
  if ((constraint_ || !params_.logit_bias.empty()) && values_[0] == -std::numeric_limits<float>::infinity())
    fail(ErrorKind::kInvalidArgument, kAllBanned);  // the row's best is −inf: every entry is
  if (is_greedy(params_)) {
    order_.resize(1);
    weights_.assign(1, 1.0);
    return {order_, weights_, 1.0};
  }
  return weigh(n, values_[0]);
}

SampledToken Sampler::draw(const TokenDist& d) { return finish(is_greedy(params_) ? d.ids[0] : sample_token(d, rng_)); }

SampledToken Sampler::judge(const TokenDist& d, int32_t draft, bool& accepted) {
  if (is_greedy(params_)) {
    accepted = d.ids[0] == draft;
    return finish(d.ids[0]);
  }
  const DraftVerdict v = verify_one_hot(d, draft, rng_);
  accepted = v.accepted;
  return finish(v.token);
}

SampledToken Sampler::sample_top(std::span<const float> pairs) { return draw(distribution_top(pairs)); }

SampledToken Sampler::verify_top(std::span<const float> pairs, int32_t draft, bool& accepted) {
  return judge(distribution_top(pairs), draft, accepted);
}

void Sampler::keep_raw(std::span<const float> logits) {
  if (params_.logprobs) raw_.assign(logits.begin(), logits.end());
}

SampledToken Sampler::finish(int32_t id) {
  SampledToken out;
  out.id = id;
  if (params_.logprobs) fill_logprobs(raw_, out.id, params_.top_logprobs, out);
  observe(out.id);
  return out;
}

bool Sampler::plain_greedy() const {
  return is_greedy(params_) && candidates_needed() == 1 && params_.logit_bias.empty() && constraint_ == nullptr;
}

SampledToken Sampler::take_argmax(int32_t argmax) {
  if (!plain_greedy()) fail(ErrorKind::kInternal, "take_argmax on a sampler that is not plain greedy");
  return finish(argmax);
}

SampledToken Sampler::verify_argmax(int32_t argmax, int32_t draft, bool& accepted) {
  if (!plain_greedy()) fail(ErrorKind::kInternal, "verify_argmax on a sampler that is not plain greedy");
  accepted = argmax == draft;
  return finish(argmax);
}

SampledToken Sampler::sample(std::span<float> logits) {
  keep_raw(logits);
  return draw(distribution(logits));
}

SampledToken Sampler::verify(std::span<float> logits, int32_t draft, bool& accepted) {
  keep_raw(logits);
  return judge(distribution(logits), draft, accepted);
}

}  // namespace ninfer
