#include "engine/constrain/token_masks.h"

#include <algorithm>
#include <bit>

#include "engine/core/error.h"

namespace ninfer::constrain {

size_t TokenBits::count() const {
  size_t n = 0;
  for (uint64_t w : words) n += static_cast<size_t>(std::popcount(w));
  return n;
}

TokenVocabulary::TokenVocabulary(std::vector<std::string> bytes, const std::vector<bool>& eligible)
    : bytes_(std::move(bytes)) {
  if (eligible.size() != bytes_.size())
    fail(ErrorKind::kInternal, "token vocabulary: {} eligibility flags for {} tokens", eligible.size(), bytes_.size());
  eligible_.assign(bytes_.size(), false);
  for (size_t id = 0; id < bytes_.size(); ++id)
    if (eligible[id] && !bytes_[id].empty())
      eligible_[id] = true, sorted_.push_back(static_cast<int32_t>(id)), longest_ = std::max(longest_, bytes_[id].size());
  std::sort(sorted_.begin(), sorted_.end(), [&](int32_t a, int32_t b) {
    const std::string& x = bytes_[static_cast<size_t>(a)];
    const std::string& y = bytes_[static_cast<size_t>(b)];
    return x != y ? x < y : a < b;  // std::string compares bytes as unsigned char
  });
  lcp_.assign(sorted_.size(), 0);
  for (size_t i = 1; i < sorted_.size(); ++i) {
    const std::string& x = bytes_[static_cast<size_t>(sorted_[i - 1])];
    const std::string& y = bytes_[static_cast<size_t>(sorted_[i])];
    const size_t n = std::min(x.size(), y.size());
    uint32_t k = 0;
    while (k < n && x[k] == y[k]) ++k;
    lcp_[i] = k;
  }
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::from_tokenizer(const Tokenizer& tokenizer,
                                                                       const std::vector<bool>& output_ids) {
  const int32_t n = tokenizer.vocab_size();
  std::vector<std::string> bytes(static_cast<size_t>(n));
  std::vector<bool> eligible(static_cast<size_t>(n), false);
  for (int32_t id = 0; id < n; ++id) {
    try {
      bytes[static_cast<size_t>(id)] = std::string(tokenizer.token_bytes(id));
    } catch (const Error&) {
      continue;  // an id the tokenizer leaves unused
    }
    const bool output = output_ids.empty() || (static_cast<size_t>(id) < output_ids.size() && output_ids[static_cast<size_t>(id)]);
    eligible[static_cast<size_t>(id)] = output && !tokenizer.is_special(id);
  }
  return std::make_shared<const TokenVocabulary>(std::move(bytes), eligible);
}

GrammarMasks::GrammarMasks(const Grammar& grammar, const TokenVocabulary& vocab) : matcher_(grammar), vocab_(vocab) {}

size_t GrammarMasks::walks() const {
  std::lock_guard lock(mu_);
  return suffixes_.size();
}
size_t GrammarMasks::state_hits() const {
  std::lock_guard lock(mu_);
  return hits_;
}
size_t GrammarMasks::state_misses() const {
  std::lock_guard lock(mu_);
  return misses_;
}

// One walk over the sorted vocabulary from the frames of `suffix`. ds[d] holds the stacks after the first d bytes of
// the current token; a token sharing a prefix with the previous one resumes from the common depth, and a rejected
// prefix skips every following token that shares it.
SuffixMask GrammarMasks::compute(std::span<const uint32_t> suffix) const {
  SuffixMask sm{TokenBits(vocab_.size()), {}};
  const std::vector<int32_t>& sorted = vocab_.sorted();
  const std::vector<uint32_t>& lcp = vocab_.lcp();
  std::vector<StackSet> ds(1);
  ds[0].data.push_back(static_cast<uint32_t>(suffix.size()));
  ds[0].data.insert(ds[0].data.end(), suffix.begin(), suffix.end());
  std::vector<uint8_t> exited(1, 0);  // exited[d]: the frames finished within the first d bytes (the top is a byte set)
  size_t good = 0;                    // ds[0..good] belong to the previous token's prefix
  for (size_t i = 0; i < sorted.size();) {
    const std::string& t = vocab_.bytes(sorted[i]);
    size_t k = std::min<size_t>(lcp[i], good);
    bool rejected = false;
    for (; k < t.size(); ++k) {
      if (ds.size() < k + 2) ds.resize(k + 2), exited.resize(k + 2);
      if (!matcher_.advance(ds[k], static_cast<uint8_t>(t[k]), ds[k + 1])) {
        rejected = true;
        break;
      }
      exited[k + 1] = exited[k] || ds[k + 1].complete();
    }
    if (!rejected) {  // every byte consumed inside the frames (an empty stack cannot consume)
      sm.accepted.set(sorted[i]);
      good = t.size();
      ++i;
      continue;
    }
    // Byte k has no parse inside the frames. Had they finished after fewer bytes, the rest of the stack decides.
    good = k;
    const bool dependent = exited[k];
    size_t j = i;
    do {
      if (dependent) sm.dependent.push_back(sorted[j]);
      ++j;
    } while (j < sorted.size() && lcp[j] >= k + 1);
    i = j;
  }
  return sm;
}

const SuffixMask& GrammarMasks::suffix_mask(std::span<const uint32_t> stack) {
  size_t& frames = suffix_len_.try_emplace(stack.back(), 1).first->second;
  for (;;) {
    const size_t len = std::min(frames, stack.size());
    std::vector<uint32_t> key(stack.end() - static_cast<std::ptrdiff_t>(len), stack.end());
    auto it = suffixes_.find(key);
    if (it == suffixes_.end()) {
      SuffixMask m = compute(key);
      it = suffixes_.emplace(std::move(key), std::move(m)).first;
    }
    if (it->second.dependent.size() <= kMaxDependent || len == stack.size()) return it->second;
    frames = len * 2;  // too much depends on what lies below: key this top position by more frames
  }
}

void GrammarMasks::build(const StackSet& state, TokenBits& out) {
  std::fill(out.words.begin(), out.words.end(), 0);
  StackSet single;
  state.for_each([&](std::span<const uint32_t> stack) {
    if (stack.empty()) return;  // the grammar is complete here: end-of-output tokens are the caller's
    const SuffixMask& m = suffix_mask(stack);
    out.merge(m.accepted);
    const size_t frames = std::min(suffix_len_[stack.back()], stack.size());
    if (frames == stack.size()) return;  // the whole stack: a token that finishes it and goes on is no sentence
    single.data.assign(1, static_cast<uint32_t>(stack.size()));
    single.data.insert(single.data.end(), stack.begin(), stack.end());
    for (int32_t id : m.dependent)
      if (!out.test(id) && matcher_.accepts(single, vocab_.bytes(id))) out.set(id);
  });
}

void GrammarMasks::allowed(const StackSet& state, TokenBits& out) {
  std::lock_guard lock(mu_);
  ++clock_;
  if (auto it = states_.find(state.data); it != states_.end()) {
    ++hits_;
    it->second.used = clock_;
    out.words = it->second.bits.words;
    return;
  }
  ++misses_;
  if (out.words.size() != (vocab_.size() + 63) / 64) out = TokenBits(vocab_.size());
  build(state, out);
  if (states_.size() >= kStateCacheSize) {
    auto oldest = states_.begin();
    for (auto it = states_.begin(); it != states_.end(); ++it)
      if (it->second.used < oldest->second.used) oldest = it;
    states_.erase(oldest);
  }
  states_.emplace(state.data, CachedState{out, clock_});
}

}  // namespace ninfer::constrain
