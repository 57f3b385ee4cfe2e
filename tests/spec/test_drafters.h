// Owns the spec tests' drafters: a contract-checking base, random, oracle and "mostly right" drafters, and the
// factories that hand them to an Engine while the test keeps a pointer to read what they saw.
#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "engine/speculative/drafter.h"

namespace ninfer::testing {

// Tracks every sequence's committed tokens and feature rows from observe() and records the first violation of the
// Drafter contract (drafter.h) in `violation`; subclasses only guess.
class ContractDrafter : public Drafter {
 public:
  struct Seq {
    std::vector<int32_t> tokens{-1};  // tokens[p] = token at position p (position 0 is never handed over)
    std::vector<float> features;      // [rows, width]
    int64_t rows() const { return static_cast<int64_t>(tokens.size()) - 1; }
  };

  ContractDrafter(FeatureSpec spec, int64_t hidden, int32_t max_k) : spec_(std::move(spec)), hidden_(hidden), max_k_(max_k) {}

  const FeatureSpec& features() const override { return spec_; }
  int32_t max_draft_tokens() const override { return max_k_; }
  uint64_t cache_bytes() const override { return 0; }  // host-side bookkeeping only, no caches
  void add_sequence(SeqId seq) override {
    if (!seqs_.emplace(seq, Seq{}).second) fail_contract(fmt::format("add_sequence({}) twice", seq));
  }
  void release(SeqId seq) override {
    if (seqs_.erase(seq) == 0) fail_contract(fmt::format("release({}) of an unknown sequence", seq));
    released++;
  }
  void observe(std::span<const DraftRows> rows) override {
    observe_calls++;
    for (const DraftRows& r : rows) {
      auto it = seqs_.find(r.seq);
      if (it == seqs_.end()) return fail_contract(fmt::format("observe of unknown sequence {}", r.seq));
      Seq& s = it->second;
      const int64_t n = static_cast<int64_t>(r.next_tokens.size());
      const size_t width = static_cast<size_t>(spec_.width(hidden_));
      if (n == 0) return fail_contract("observe with no rows");
      if (r.start > s.rows()) return fail_contract(fmt::format("observe at {} but only {} rows held", r.start, s.rows()));
      if (r.features.size() != static_cast<size_t>(n) * width)
        return fail_contract(fmt::format("{} feature floats for {} rows of width {}", r.features.size(), n, width));
      if (r.start < s.rows()) rollbacks++;
      s.tokens.resize(static_cast<size_t>(r.start) + 1);
      s.features.resize(static_cast<size_t>(r.start) * width);
      s.tokens.insert(s.tokens.end(), r.next_tokens.begin(), r.next_tokens.end());
      s.features.insert(s.features.end(), r.features.begin(), r.features.end());
    }
  }
  void propose(std::span<const SeqId> seqs, int32_t k, std::span<int32_t> drafts) override {
    propose_calls++;
    if (k < 1 || k > max_k_) return fail_contract(fmt::format("propose k = {}", k));
    if (drafts.size() != seqs.size() * static_cast<size_t>(k)) return fail_contract("propose: drafts span size");
    for (size_t i = 0; i < seqs.size(); ++i) {
      auto it = seqs_.find(seqs[i]);
      if (it == seqs_.end() || it->second.rows() == 0)
        return fail_contract(fmt::format("propose for sequence {} before observe", seqs[i]));
      guess(it->second, drafts.subspan(i * static_cast<size_t>(k), static_cast<size_t>(k)));
    }
  }

  const Seq* find(SeqId seq) const {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? nullptr : &it->second;
  }

  std::string violation;
  int64_t rollbacks = 0, released = 0, observe_calls = 0, propose_calls = 0;

 protected:
  // k drafts following s.tokens.back() (at position s.rows()).
  virtual void guess(const Seq& s, std::span<int32_t> out) = 0;

 private:
  void fail_contract(const std::string& what) {
    if (violation.empty()) violation = what;
  }
  FeatureSpec spec_;
  int64_t hidden_;
  int32_t max_k_;
  std::map<SeqId, Seq> seqs_;
};

class RandomDrafter : public ContractDrafter {
 public:
  RandomDrafter(FeatureSpec spec, int64_t hidden, int32_t vocab, uint64_t seed)
      : ContractDrafter(std::move(spec), hidden, 16), vocab_(vocab), rng_(seed) {}

 protected:
  void guess(const Seq&, std::span<int32_t> out) override {
    for (int32_t& d : out) d = static_cast<int32_t>(rng_() % static_cast<uint64_t>(vocab_));
  }

 private:
  int32_t vocab_;
  std::mt19937_64 rng_;
};

// Knows the full token lists (prompt + true continuation) and drafts the one whose positions 1.. match what it
// observed. wrong_every > 0 makes the draft for every position p with p % wrong_every == 0 wrong.
class OracleDrafter : public ContractDrafter {
 public:
  OracleDrafter(FeatureSpec spec, int64_t hidden, int32_t vocab, std::vector<std::vector<int32_t>> truths,
                int wrong_every = 0)
      : ContractDrafter(std::move(spec), hidden, 16), vocab_(vocab), truths_(std::move(truths)), wrong_every_(wrong_every) {}

 protected:
  void guess(const Seq& s, std::span<int32_t> out) override {
    const std::vector<int32_t>* truth = nullptr;
    for (const auto& t : truths_)
      if (t.size() >= s.tokens.size() && std::equal(s.tokens.begin() + 1, s.tokens.end(), t.begin() + 1)) truth = &t;
    for (size_t j = 0; j < out.size(); ++j) {
      const size_t p = s.tokens.size() + j;
      int32_t d = truth && p < truth->size() ? (*truth)[p] : 0;
      if (wrong_every_ > 0 && p % static_cast<size_t>(wrong_every_) == 0) d = (d + 1) % vocab_;
      out[j] = d;
    }
  }

 private:
  int32_t vocab_;
  std::vector<std::vector<int32_t>> truths_;
  int wrong_every_;
};

// Forwards every call to a drafter the test shares: the engine destroys this, not the drafter, so the test can
// still read what it saw after the engine is gone.
class SharedDrafter final : public Drafter {
 public:
  explicit SharedDrafter(std::shared_ptr<Drafter> d) : d_(std::move(d)) {}
  const FeatureSpec& features() const override { return d_->features(); }
  int32_t max_draft_tokens() const override { return d_->max_draft_tokens(); }
  void add_sequence(SeqId seq) override { d_->add_sequence(seq); }
  void release(SeqId seq) override { d_->release(seq); }
  void observe(std::span<const DraftRows> rows) override { d_->observe(rows); }
  void propose(std::span<const SeqId> seqs, int32_t k, std::span<int32_t> drafts) override { d_->propose(seqs, k, drafts); }
  uint64_t cache_bytes() const override { return d_->cache_bytes(); }

 private:
  std::shared_ptr<Drafter> d_;
};

// A DrafterFactory handing `drafter` to one engine; the test keeps its own reference (`keep`), valid after the
// engine is destroyed.
template <typename D>
DrafterFactory hand_over(std::unique_ptr<D>& drafter, std::shared_ptr<D>& keep) {
  keep = std::shared_ptr<D>(std::move(drafter));
  std::shared_ptr<Drafter> shared = keep;
  return [shared](WeightStore&, const DrafterLimits&) -> std::unique_ptr<Drafter> {
    return std::make_unique<SharedDrafter>(shared);
  };
}

}  // namespace ninfer::testing
