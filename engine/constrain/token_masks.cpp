#include "engine/constrain/token_masks.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <set>

#include "engine/constrain/sorted_walk.h"
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

GrammarMasks::GrammarMasks(const Grammar& grammar, const TokenVocabulary& vocab) : matcher_(grammar), vocab_(vocab) {
  index_grammar();
}

// A frame of rule B sits on the return position p + 1 of every reference p to B that is not last in its alternative;
// a reference that is last (a tail call: no return frame) puts B's frame where its own rule's frame was.
void GrammarMasks::index_grammar() {
  const Grammar& g = matcher_.grammar();
  const auto& el = g.elements();
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  rule_of_.assign(el.size(), kNone);
  for (uint32_t r = 0; r < g.rule_count(); ++r)
    for (uint32_t alt : g.alternatives(r))
      for (uint32_t p = alt; p < el.size(); ++p) {
        rule_of_[p] = r;
        if (el[p].kind == Element::Kind::kEnd) break;
      }
  std::vector<std::set<uint32_t>> below(g.rule_count());
  std::vector<std::pair<uint32_t, uint32_t>> tails;  // (caller rule, callee rule)
  for (uint32_t p = 0; p + 1 < el.size(); ++p) {
    if (el[p].kind != Element::Kind::kRef) continue;
    if (rule_of_[p] == kNone)
      fail(ErrorKind::kInternal, "grammar masks: element {} (a reference to rule {}) belongs to no rule", p, el[p].arg);
    if (el[p + 1].kind == Element::Kind::kEnd) tails.emplace_back(rule_of_[p], el[p].arg);
    else below[el[p].arg].insert(p + 1);
  }
  bottom_.assign(g.rule_count(), false);
  bottom_[g.root()] = true;
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [caller, callee] : tails) {
      const size_t before = below[callee].size();
      below[callee].insert(below[caller].begin(), below[caller].end());
      changed = changed || below[callee].size() != before;
      if (bottom_[caller] && !bottom_[callee]) bottom_[callee] = true, changed = true;
    }
  }
  below_.assign(g.rule_count(), {});
  for (size_t r = 0; r < below.size(); ++r) below_[r].assign(below[r].begin(), below[r].end());
  // Counted repetitions whose item takes at least one byte (a counted walk opens the next item after each).
  if (el.size() >= kCounted) fail(ErrorKind::kInternal, "grammar masks: {} grammar elements", el.size());
  counter_rep_.assign(el.size(), -1);
  counter_done_.assign(el.size(), 0);
  for (size_t i = 0; i < g.repeats().size(); ++i) {
    const Repeat& r = g.repeats()[i];
    if (matcher_.shortest(r.item) == 0) continue;
    for (size_t d = 0; d < r.counters.size(); ++d)
      counter_rep_[r.counters[d]] = static_cast<int32_t>(i), counter_done_[r.counters[d]] = static_cast<uint32_t>(d);
  }
}

std::vector<std::vector<uint32_t>> GrammarMasks::suffixes_of(uint32_t top, size_t frames, size_t limit) const {
  std::vector<std::vector<uint32_t>> out;
  std::vector<uint32_t> chain{top};  // top first
  auto emit = [&] { out.emplace_back(chain.rbegin(), chain.rend()); };
  auto down = [&](auto& self) -> bool {
    if (chain.size() == frames) {
      emit();
      return out.size() <= limit;
    }
    const uint32_t r = rule_of_[chain.back()];
    if (bottom_[r]) emit();  // a whole stack of fewer frames
    for (uint32_t q : below_[r]) {
      chain.push_back(q);
      if (!self(self)) return false;
      chain.pop_back();
    }
    return out.size() <= limit;
  };
  if (!down(down)) out.clear();
  return out;
}

PrecomputeStats GrammarMasks::precompute(std::stop_token stop) {
  PrecomputeStats st;
  const std::function<bool()> cancelled = [&] { return stop.stop_requested(); };
  while (!st.stopped && precompute_step(st, cancelled)) {
  }
  return st;
}

bool GrammarMasks::precompute_step(PrecomputeStats& st, const std::function<bool()>& cancelled) {
  if (cancelled && cancelled()) {
    st.stopped = true;
    return false;
  }
  {
    std::unique_lock lock(mu_);
    while (!wanted_.empty()) {
      Lookup l = lookup(wanted_.front());  // again after each walk: the stack may need a longer key next
      if (l.mask) {
        wanted_.pop_front();
        continue;
      }
      if (walk(l.missing, lock, cancelled)) {
        ++st.walks, ++st.prefetch_walks;
        std::erase_if(wanted_, [&](const std::vector<uint32_t>& s) { return lookup(s).mask != nullptr; });
        return true;
      }
      if (cancelled && cancelled()) {
        st.stopped = true;
        return false;
      }
    }
  }
  if (reach_step(st, cancelled)) return !st.stopped;
  if (st.stopped) return false;
  return enumerate_step(st, cancelled) && !st.stopped;
}

// The breadth-first pass: the stacks of the start state, then those one byte further, and so on (up to
// kMaxReachStacks expanded). Each stack's suffix masks are walked as allowed() keys them before it is expanded.
bool GrammarMasks::reach_step(PrecomputeStats& st, const std::function<bool()>& cancelled) {
  Cursor& c = cursor_;
  if (c.reach_done) return false;
  if (!c.reach_started) {
    c.reach_started = true;
    matcher_.start().for_each([&](std::span<const uint32_t> stack) {
      std::vector<uint32_t> s(stack.begin(), stack.end());
      if (!s.empty() && c.seen.insert(s).second) c.queue.push_back(std::move(s));
    });
  }
  const auto& el = matcher_.grammar().elements();
  const auto& sets = matcher_.grammar().sets();
  StackSet one, next;
  while (!c.queue.empty() && c.expanded < kMaxReachStacks) {
    const std::vector<uint32_t>& stack = c.queue.front();
    {
      std::unique_lock lock(mu_);
      Lookup l = lookup(stack);
      if (!l.mask) {
        const bool walked = walk(l.missing, lock, cancelled);
        if (walked) ++st.walks, ++st.reach_walks;
        else if (cancelled && cancelled()) st.stopped = true;
        return true;  // the next call looks this stack up again (a longer key may follow)
      }
    }
    // Expanded: the stacks after each byte its top accepts.
    one.data.assign(1, static_cast<uint32_t>(stack.size()));
    one.data.insert(one.data.end(), stack.begin(), stack.end());
    const ByteSet& set = sets[el[stack.back()].arg];
    for (unsigned b = 0; b < 256; ++b) {
      if (!set.has(static_cast<uint8_t>(b)) || !matcher_.advance(one, static_cast<uint8_t>(b), next)) continue;
      next.for_each([&](std::span<const uint32_t> s) {
        if (s.empty() || c.seen.size() >= 8 * kMaxReachStacks) return;
        std::vector<uint32_t> v(s.begin(), s.end());
        if (c.seen.insert(v).second) c.queue.push_back(std::move(v));
      });
    }
    ++c.expanded;
    c.queue.pop_front();
  }
  c.reach_done = true;
  c.queue.clear();
  c.seen.clear();
  return false;
}

// The enumeration: every byte-set position's stack suffixes from the grammar, one frame first, doubled while some
// suffix leaves more than kMaxDependent tokens to the frames below.
bool GrammarMasks::enumerate_step(PrecomputeStats& st, const std::function<bool()>& cancelled) {
  Cursor& c = cursor_;
  const auto& el = matcher_.grammar().elements();
  const auto next_top = [&] { ++c.top, c.frames = 1, c.listed = false; };
  while (c.top < el.size()) {
    if (el[c.top].kind != Element::Kind::kBytes) {
      ++c.top;
      continue;
    }
    if (!c.listed) {
      if (c.frames == 1) ++st.positions;
      c.keys = suffixes_of(c.top, c.frames, kMaxSuffixesPerTop);
      c.next = 0, c.deeper = false, c.listed = true;
      if (c.keys.empty()) {  // too many suffixes (or none can occur): run time keys what occurs
        ++st.left_to_runtime;
        next_top();
        continue;
      }
    }
    std::unique_lock lock(mu_);
    while (c.next < c.keys.size()) {
      const std::vector<uint32_t>& key = c.keys[c.next];
      const SuffixMask* m = find_mask(key);
      if (!m) {
        if (walk(key, lock, cancelled)) {
          ++st.walks;
          return true;  // looked at again (walked now) by the next call
        }
        if (cancelled && cancelled()) {
          st.stopped = true;
          return false;
        }
        continue;  // another thread walked it (or gave up: then walked here next time round)
      }
      const bool deeper_possible = key.size() == c.frames && !below_[rule_of_[key.front()]].empty();
      if (m->dependent.size() > kMaxDependent && deeper_possible) c.deeper = true;
      ++c.next;
    }
    size_t& f = suffix_len_.try_emplace(c.top, 1).first->second;
    f = std::max(f, c.frames);
    lock.unlock();
    if (!c.deeper) {
      next_top();
    } else if (c.frames * 2 > kMaxSuffixFrames) {
      ++st.left_to_runtime;
      next_top();
    } else {
      c.frames *= 2, c.listed = false;
    }
  }
  return false;
}

template <typename F>
void GrammarMasks::for_each_unwalked(const StackSet& state, F&& f) {
  if (states_.contains(state.data)) return;
  state.for_each([&](std::span<const uint32_t> stack) {
    if (!stack.empty() && !lookup(stack).mask) f(stack);
  });
}

bool GrammarMasks::ready(const StackSet& state) {
  std::lock_guard lock(mu_);
  bool walked = true;
  for_each_unwalked(state, [&](std::span<const uint32_t>) { walked = false; });
  return walked;
}

bool GrammarMasks::want(const StackSet& state) {
  std::lock_guard lock(mu_);
  bool queued = false;
  for_each_unwalked(state, [&](std::span<const uint32_t> stack) {
    std::vector<uint32_t> s(stack.begin(), stack.end());
    if (std::find(wanted_.begin(), wanted_.end(), s) != wanted_.end()) return;
    if (wanted_.size() >= kMaxWanted) wanted_.pop_front();
    wanted_.push_back(std::move(s));
    queued = true;
  });
  return queued;
}

bool GrammarMasks::wanted() const {
  std::lock_guard lock(mu_);
  return !wanted_.empty();
}

size_t GrammarMasks::walks() const {
  std::lock_guard lock(mu_);
  return walks_;
}
size_t GrammarMasks::runtime_walks() const {
  std::lock_guard lock(mu_);
  return runtime_walks_;
}
size_t GrammarMasks::runtime_waits() const {
  std::lock_guard lock(mu_);
  return runtime_waits_;
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
namespace {

// The vocabulary walk both suffix-mask walks make: tokens in sorted order from ds[0], per-depth states ds[d] after a
// token's first d bytes (grown as needed). A token sharing a prefix with the one before starts after it; where byte k
// of a token has no parse, every token sharing its first k + 1 bytes is refused at once. step(from, byte, to) runs
// one byte (false: no parse), whole(id, state) gets a token all of whose bytes ran, refused(id, state) one whose
// bytes ran out of parses (its state after the bytes that did run). `cancelled` is polled every 4,096 tokens; returns
// false when it said stop.
template <typename State, typename Step, typename Whole, typename Refused>
bool walk_sorted(const TokenVocabulary& vocab, std::vector<State>& ds, Step&& step, Whole&& whole, Refused&& refused,
                 const std::function<bool()>& cancelled) {
  constexpr size_t kPollEvery = 4096;  // tokens between looks at `cancelled`
  const std::vector<int32_t>& sorted = vocab.sorted();
  const std::vector<uint32_t>& lcp = vocab.lcp();
  size_t good = 0;  // ds[0..good] belong to the previous token's prefix
  size_t poll = kPollEvery;
  for (size_t i = 0; i < sorted.size();) {
    if (cancelled && i >= poll) {
      if (cancelled()) return false;
      poll = i + kPollEvery;
    }
    const std::string& t = vocab.bytes(sorted[i]);
    size_t k = std::min<size_t>(lcp[i], good);
    bool ran = true;
    for (; k < t.size(); ++k) {
      if (ds.size() < k + 2) ds.resize(k + 2);
      if (!step(ds[k], static_cast<uint8_t>(t[k]), ds[k + 1])) {
        ran = false;
        break;
      }
    }
    if (ran) {
      whole(sorted[i], ds[t.size()]);
      good = t.size();
      ++i;
      continue;
    }
    good = k;  // byte k has no parse: so for every token sharing the first k + 1 bytes
    size_t j = i;
    do {
      refused(sorted[j], ds[k]);
      ++j;
    } while (j < sorted.size() && lcp[j] >= k + 1);
    i = j;
  }
  return true;
}

}  // namespace

std::optional<SuffixMask> GrammarMasks::compute(std::span<const uint32_t> suffix,
                                                const std::function<bool()>& cancelled) const {
  SuffixMask sm{TokenBits(vocab_.size()), {}};
  struct Depth {
    StackSet stacks;
    bool exited = false;  // the frames finished within the bytes so far (the top is a byte set)
  };
  std::vector<Depth> ds(1);
  ds[0].stacks.data.push_back(static_cast<uint32_t>(suffix.size()));
  ds[0].stacks.data.insert(ds[0].stacks.data.end(), suffix.begin(), suffix.end());
  const auto step = [&](const Depth& a, uint8_t byte, Depth& z) {
    if (!matcher_.advance(a.stacks, byte, z.stacks)) return false;
    z.exited = a.exited || z.stacks.complete();
    return true;
  };
  // Every byte consumed inside the frames (an empty stack cannot consume): accepted. Byte k has no parse inside the
  // frames: had they finished after fewer bytes, the rest of the stack decides.
  const bool done = walk_sorted(
      vocab_, ds, step, [&](int32_t id, const Depth&) { sm.accepted.set(id); },
      [&](int32_t id, const Depth& d) {
        if (d.exited) sm.dependent.push_back(id);
      },
      cancelled);
  if (!done) return std::nullopt;
  return sm;
}

// The walk of a key through a counted repetition: the frames above the counter (the item in progress) and those below
// it (what follows the repetition) are run apart. At each depth, in[j] holds the stacks of item j's frames (the item in
// progress is j = 0) and out[j] those of the frames below after leaving the repetition at the end of item j; an item
// that ends opens item j + 1 and the way out after item j both, whatever the count (derive() applies it). [lo, hi]
// holds the j after which the frames below ended too within the bytes so far (the stack below the key decides the rest).
std::optional<CountedMask> GrammarMasks::compute_counted(std::span<const uint32_t> key, size_t at,
                                                         const std::function<bool()>& cancelled) const {
  const Repeat& rep = matcher_.grammar().repeats()[key[at] & ~kCounted];
  StackSet item_start, below_start;
  matcher_.expand_rule(rep.item, item_start);
  matcher_.expand(key.first(at), below_start);
  // Item j's sets are in[j - base] (j < base + n): an item, or a way out, that has died never comes back.
  struct Depth {
    size_t base = 0, n = 0;
    std::vector<StackSet> in, out;
    uint32_t lo = CountedMask::kNone, hi = 0;
  };
  const auto drop_empty = [](StackSet& s) {  // removes the empty stack (the item has ended); whether it was there
    bool found = false;
    size_t w = 0;
    for (size_t r = 0; r < s.data.size();) {
      const uint32_t len = s.data[r];
      if (len == 0) {
        found = true, ++r;
        continue;
      }
      const auto from = s.data.begin() + static_cast<std::ptrdiff_t>(r);
      std::copy(from, from + static_cast<std::ptrdiff_t>(1 + len), s.data.begin() + static_cast<std::ptrdiff_t>(w));
      w += 1 + len, r += 1 + len;
    }
    s.data.resize(w);
    return found;
  };
  const auto merge = [&](const StackSet& from, StackSet& to) {  // both expanded already
    if (to.dead()) to.data.assign(from.data.begin(), from.data.end());
    else from.for_each([&](std::span<const uint32_t> st) { matcher_.expand(st, to); });
  };
  const auto step = [&](const Depth& a, uint8_t byte, Depth& z) {
    size_t n = a.n + 1;
    if (z.in.size() < n) z.in.resize(n), z.out.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (i < a.n && !a.in[i].dead()) matcher_.advance(a.in[i], byte, z.in[i]);
      else z.in[i].clear();
      if (i < a.n && !a.out[i].dead()) matcher_.advance(a.out[i], byte, z.out[i]);
      else z.out[i].clear();
    }
    for (size_t i = 0; i + 1 < n; ++i)
      if (drop_empty(z.in[i])) merge(item_start, z.in[i + 1]), merge(below_start, z.out[i]);
    z.lo = a.lo, z.hi = a.hi;
    for (size_t i = 0; i < n; ++i)
      if (z.out[i].complete())
        z.lo = std::min(z.lo, static_cast<uint32_t>(a.base + i)), z.hi = std::max(z.hi, static_cast<uint32_t>(a.base + i));
    size_t lo = 0;
    while (lo < n && z.in[lo].dead() && z.out[lo].dead()) ++lo;
    while (n > lo && z.in[n - 1].dead() && z.out[n - 1].dead()) --n;
    for (size_t i = lo; i < n && lo > 0; ++i) std::swap(z.in[i - lo], z.in[i]), std::swap(z.out[i - lo], z.out[i]);
    z.base = a.base + lo, z.n = n - lo;
    return z.n > 0;
  };
  CountedMask cm;
  const auto record = [&](int32_t id, const Depth& d, bool whole) {  // whole: every byte was taken
    const uint32_t begin = static_cast<uint32_t>(cm.js.size());
    if (whole) {
      for (size_t i = 0; i < d.n; ++i)
        if (!d.in[i].dead()) {
          cm.inside.emplace_back(static_cast<uint32_t>(d.base + i), id);
          break;
        }
      for (size_t i = 0; i < d.n; ++i)
        if (!d.out[i].dead()) cm.js.push_back(static_cast<uint32_t>(d.base + i));
    }
    const uint32_t end = static_cast<uint32_t>(cm.js.size());
    if (end > begin || d.lo != CountedMask::kNone) cm.exits.push_back({id, begin, end, d.lo, d.hi});
  };
  std::vector<Depth> ds(1);
  ds[0].n = 1;
  ds[0].in.resize(1), ds[0].out.resize(1);
  ds[0].in[0].data.push_back(static_cast<uint32_t>(key.size() - at - 1));
  ds[0].in[0].data.insert(ds[0].in[0].data.end(), key.begin() + static_cast<std::ptrdiff_t>(at) + 1, key.end());
  // A refused token: every token sharing the bytes up to the one with no parse has the same exits.
  const bool done = walk_sorted(
      vocab_, ds, step, [&](int32_t id, const Depth& d) { record(id, d, true); },
      [&](int32_t id, const Depth& d) { record(id, d, false); }, cancelled);
  if (!done) return std::nullopt;
  std::stable_sort(cm.inside.begin(), cm.inside.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  if (!cm.inside.empty()) cm.last = cm.inside.back().first;
  for (uint32_t j : cm.js) cm.last = std::max(cm.last, j);
  for (const CountedMask::Exit& x : cm.exits)
    if (x.dep_lo != CountedMask::kNone) cm.last = std::max(cm.last, x.dep_hi);
  return cm;
}

SuffixMask GrammarMasks::derive(const CountedMask& cm, uint64_t last, uint64_t first_out) const {
  SuffixMask sm{TokenBits(vocab_.size()), {}};
  for (const auto& [j, id] : cm.inside) {
    if (j > last) break;
    sm.accepted.set(id);
  }
  const auto any = [&](uint32_t b, uint32_t e) {
    for (uint32_t i = b; i < e; ++i)
      if (cm.js[i] >= first_out && cm.js[i] <= last) return true;
    return false;
  };
  for (const CountedMask::Exit& x : cm.exits) {
    if (sm.accepted.test(x.id)) continue;
    if (any(x.begin, x.end)) sm.accepted.set(x.id);
    else if (x.dep_lo != CountedMask::kNone && x.dep_lo <= last && x.dep_hi >= first_out) sm.dependent.push_back(x.id);
  }
  return sm;
}

GrammarMasks::Lookup GrammarMasks::lookup(std::span<const uint32_t> stack) {
  size_t& frames = suffix_len_.try_emplace(stack.back(), 1).first->second;  // unordered_map: the reference stays put
  for (;;) {
    const size_t len = std::min(frames, stack.size());
    std::vector<uint32_t> key(stack.end() - static_cast<std::ptrdiff_t>(len), stack.end());
    const SuffixMask* m = find_mask(key);
    if (!m) return {nullptr, len, std::move(key)};
    if (m->dependent.size() <= kMaxDependent || len == stack.size()) return {m, len, {}};
    frames = len * 2;  // too much depends on what lies below: key this top position by more frames
  }
}

bool GrammarMasks::walk(const std::vector<uint32_t>& key, std::unique_lock<std::mutex>& lock,
                        const std::function<bool()>& cancelled) {
  if (find_mask(key)) return false;
  const std::ptrdiff_t at = counter_at(key);
  const std::vector<uint32_t> wkey = walk_key(key);  // every count of a repetition waits for the one walk
  if (walking_.contains(wkey)) {
    walked_.wait(lock, [&] { return !walking_.contains(wkey); });
    return false;
  }
  walking_.insert(wkey);
  lock.unlock();
  std::optional<SuffixMask> m;
  std::optional<CountedMask> cm;
  try {
    // Without the lock: other suffixes are looked up and walked meanwhile.
    if (at >= 0) cm = compute_counted(wkey, static_cast<size_t>(at), cancelled);
    else m = compute(key, cancelled);
  } catch (...) {
    lock.lock();
    walking_.erase(wkey);
    walked_.notify_all();
    throw;
  }
  lock.lock();
  walking_.erase(wkey);
  const bool done = m.has_value() || cm.has_value();
  if (m) suffixes_.emplace(key, std::make_shared<const SuffixMask>(std::move(*m)));
  if (cm) counted_.emplace(wkey, Counted{std::move(*cm), {}});  // the key's own mask is derived as it is looked up
  if (done) ++walks_;
  walked_.notify_all();
  return done;
}

std::ptrdiff_t GrammarMasks::counter_at(std::span<const uint32_t> key) const {
  for (size_t i = key.size(); i-- > 0;)
    if (key[i] < counter_rep_.size() && counter_rep_[key[i]] >= 0) return static_cast<std::ptrdiff_t>(i);
  return -1;
}

std::vector<uint32_t> GrammarMasks::walk_key(const std::vector<uint32_t>& key) const {
  std::vector<uint32_t> w = key;
  if (const std::ptrdiff_t at = counter_at(key); at >= 0)
    w[static_cast<size_t>(at)] = kCounted | static_cast<uint32_t>(counter_rep_[key[static_cast<size_t>(at)]]);
  return w;
}

const SuffixMask* GrammarMasks::find_mask(const std::vector<uint32_t>& key) {
  if (auto it = suffixes_.find(key); it != suffixes_.end()) return it->second.get();
  const std::ptrdiff_t at = counter_at(key);
  if (at < 0) return nullptr;
  auto c = counted_.find(walk_key(key));
  if (c == counted_.end()) return nullptr;
  const uint32_t counter = key[static_cast<size_t>(at)];
  // Item j (0: the one in progress) exists while done + j < max; the repetition may end after it once
  // done + j + 1 ≥ min.
  const Repeat& rep = matcher_.grammar().repeats()[static_cast<size_t>(counter_rep_[counter])];
  const uint64_t done = counter_done_[counter], top = c->second.walk.last;
  const uint64_t last =
      rep.max == Expr::kUnbounded ? top : std::min<uint64_t>(static_cast<uint64_t>(rep.max) - done - 1, top);
  const uint64_t min = static_cast<uint64_t>(rep.min);
  const uint64_t first_out = std::min<uint64_t>(min > done + 1 ? min - done - 1 : 0, top + 1);
  std::shared_ptr<const SuffixMask>& m = c->second.derived[{last, first_out}];
  if (!m) m = std::make_shared<const SuffixMask>(derive(c->second.walk, last, first_out));
  return suffixes_.emplace(key, m).first->second.get();
}

std::pair<const SuffixMask*, size_t> GrammarMasks::suffix_mask(std::span<const uint32_t> stack,
                                                               std::unique_lock<std::mutex>& lock) {
  for (;;) {
    Lookup l = lookup(stack);
    if (l.mask) return {l.mask, l.frames};
    const bool other = walking_.contains(walk_key(l.missing));
    if (walk(l.missing, lock)) ++runtime_walks_;
    else if (other) ++runtime_waits_;
  }
}

void GrammarMasks::build(const StackSet& state, TokenBits& out, std::unique_lock<std::mutex>& lock) {
  std::fill(out.words.begin(), out.words.end(), 0);
  StackSet single;
  state.for_each([&](std::span<const uint32_t> stack) {
    if (stack.empty()) return;  // the grammar is complete here: end-of-output tokens are the caller's
    const auto [m, frames] = suffix_mask(stack, lock);
    out.merge(m->accepted);
    if (frames == stack.size()) return;  // the whole stack: a token that finishes it and goes on is no sentence
    single.data.assign(1, static_cast<uint32_t>(stack.size()));
    single.data.insert(single.data.end(), stack.begin(), stack.end());
    check_sorted(single, m->dependent, out);
  });
}

void GrammarMasks::check_sorted(const StackSet& from, const std::vector<int32_t>& ids, TokenBits& out) const {
  thread_local SortedWalk walk;
  walk.start(matcher_, vocab_, from);
  for (int32_t id : ids)
    if (!out.test(id) && walk.after(id)) out.set(id);  // skipped when another stack accepts it already
}

void GrammarMasks::allowed(const StackSet& state, TokenBits& out) {
  std::unique_lock lock(mu_);
  ++clock_;
  if (auto it = states_.find(state.data); it != states_.end()) {
    ++hits_;
    it->second.used = clock_;
    out.words = it->second.bits.words;
    return;
  }
  ++misses_;
  if (out.words.size() != (vocab_.size() + 63) / 64) out = TokenBits(vocab_.size());
  build(state, out, lock);  // may release the lock while it walks or waits for a walk
  if (states_.contains(state.data)) return;  // another caller built it meanwhile
  if (states_.size() >= kStateCacheSize) {
    auto oldest = states_.begin();
    for (auto it = states_.begin(); it != states_.end(); ++it)
      if (it->second.used < oldest->second.used) oldest = it;
    states_.erase(oldest);
  }
  states_.emplace(state.data, CachedState{out, clock_});
}

}  // namespace ninfer::constrain
