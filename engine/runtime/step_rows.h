// Owns how a step's sampled logit rows reach each request's sampler: as whole rows, as their argmax ids, or as their
// first top-k (value, id) pairs (LogitsOut), whichever the model runner handed back.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/runtime/sampling.h"

namespace ninfer {

struct StepRows {
  std::span<const float> logits;   // [rows, vocab], or empty
  std::span<const int32_t> argmax;  // [rows], or empty
  std::span<const float> top;      // [rows, k, 2], or empty
  int32_t k = 0;
  size_t vocab = 0;

  // Rows [row, row + n).
  StepRows slice(size_t row, size_t n) const {
    StepRows s = *this;
    if (!logits.empty()) s.logits = logits.subspan(row * vocab, n * vocab);
    if (!argmax.empty()) s.argmax = argmax.subspan(row, n);
    if (!top.empty()) s.top = top.subspan(row * 2 * static_cast<size_t>(k), n * 2 * static_cast<size_t>(k));
    return s;
  }

  // Sampler::sample of row j (a whole row is copied into `scratch`, which the sampler modifies).
  SampledToken sample(Sampler& sampler, size_t j, std::vector<float>& scratch) const {
    if (!argmax.empty()) return sampler.take_argmax(argmax[j]);
    if (!top.empty()) return sampler.sample_top(pairs(j));
    return sampler.sample(row(j, scratch));
  }
  // Sampler::verify of `draft` at row j.
  SampledToken verify(Sampler& sampler, size_t j, int32_t draft, bool& accepted, std::vector<float>& scratch) const {
    if (!argmax.empty()) return sampler.verify_argmax(argmax[j], draft, accepted);
    if (!top.empty()) return sampler.verify_top(pairs(j), draft, accepted);
    return sampler.verify(row(j, scratch), draft, accepted);
  }

 private:
  std::span<const float> pairs(size_t j) const {
    return top.subspan(j * 2 * static_cast<size_t>(k), 2 * static_cast<size_t>(k));
  }
  std::span<float> row(size_t j, std::vector<float>& scratch) const {
    scratch.assign(logits.begin() + static_cast<std::ptrdiff_t>(j * vocab),
                   logits.begin() + static_cast<std::ptrdiff_t>((j + 1) * vocab));
    return scratch;
  }
};

}  // namespace ninfer
