#include "tests/cuda/tp_cuda_model.h"

#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "tests/backend/test_util.h"
#include "tests/model/reference_model.h"
#include "tests/parallel/tp_model.h"

namespace ninfer::testing {

namespace {

constexpr double kLogitRelTol = 2e-3;  // tests/cuda/e2e_test.cpp

// Each step's logits (a chunked prefill, then `decode` greedy steps fed with `feed`'s tokens, or its own).
struct Steps {
  std::vector<std::vector<float>> logits;
  std::vector<int32_t> tokens;
};

Steps run(TpModel& m, const std::vector<int32_t>& prompt, int64_t chunk, int decode, const std::vector<int32_t>* feed) {
  Steps out;
  const int32_t slot = m.acquire();
  constexpr SeqId kId = 5;
  const int64_t V = m.config.vocab_size;
  for (int64_t pos = 0; pos < static_cast<int64_t>(prompt.size()); pos += chunk) {
    const int64_t n = std::min<int64_t>(chunk, static_cast<int64_t>(prompt.size()) - pos);
    SequenceStep s{kId, slot, pos, std::span(prompt).subspan(static_cast<size_t>(pos), static_cast<size_t>(n)), true};
    const std::span<const float> l = m.runner->step(std::span(&s, 1));
    out.logits.emplace_back(l.begin(), l.end());
  }
  int64_t pos = static_cast<int64_t>(prompt.size());
  for (int t = 0; t < decode; ++t) {
    const auto last = std::span<const float>(out.logits.back()).last(static_cast<size_t>(V));
    out.tokens.push_back(ReferenceModel::argmax(last));
    const int32_t next = feed ? (*feed)[static_cast<size_t>(t)] : out.tokens.back();
    SequenceStep d{kId, slot, pos++, std::span(&next, 1), false};
    const std::span<const float> l = m.runner->step(std::span(&d, 1));
    out.logits.emplace_back(l.begin(), l.end());
  }
  m.release(kId, slot);
  return out;
}

}  // namespace

void expect_cuda_tp_equals_tp1(const Artifact& artifact, const std::vector<int>& devices,
                               const std::vector<int32_t>& prompt) {
  const int tp = static_cast<int>(devices.size());
  TpModel one(artifact, 1, Nvfp4Activations::kNvfp4, DType::kF32, 1, 0, {0});
  TpModel many(artifact, tp, Nvfp4Activations::kNvfp4, DType::kF32, 1, 0, devices);
  for (int64_t chunk : {int64_t{1} << 20, int64_t{7}}) {
    const Steps a = run(one, prompt, chunk, 12, nullptr);
    const Steps b = run(many, prompt, chunk, 12, &a.tokens);
    ASSERT_EQ(a.logits.size(), b.logits.size());
    double worst = 0.0;
    for (size_t s = 0; s < a.logits.size(); ++s) {
      ASSERT_EQ(a.logits[s].size(), b.logits[s].size()) << "step " << s;
      const double err = rel_err(b.logits[s], a.logits[s]);
      worst = std::max(worst, err);
      EXPECT_LE(err, kLogitRelTol) << "tp " << tp << ", prefill chunk " << chunk << ", step " << s;
    }
    EXPECT_EQ(b.tokens, a.tokens) << "tp " << tp << ", prefill chunk " << chunk;
    std::printf("cuda tp %d on devices %s chunk %lld: worst step rel err %.3g over %zu steps\n", tp,
                fmt::format("{}", fmt::join(devices, ",")).c_str(), static_cast<long long>(chunk), worst,
                a.logits.size());
  }
}


}  // namespace ninfer::testing
