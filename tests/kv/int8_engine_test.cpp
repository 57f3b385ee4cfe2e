// The int8 KV cache in the model and the engine: chunked prefill == unchunked, greedy tokens independent of chunking.
#include <condition_variable>
#include <mutex>

#include <gtest/gtest.h>

#include "engine/runtime/engine.h"
#include "tests/support/request_collector.h"
#include "tests/model/reference_model.h"

namespace ninfer {
namespace {

using testing::ReferenceModel;

const std::string kTinyArtifact = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";

// Every position's logits of `tokens`, prefilled in chunks of `chunk`.
std::vector<float> prefill_all(ReferenceModel& m, std::span<const int32_t> tokens, SeqId id, int64_t chunk) {
  const int32_t slot = m.state->acquire();
  std::vector<float> all;
  for (int64_t start = 0; start < static_cast<int64_t>(tokens.size()); start += chunk) {
    const int64_t n = std::min<int64_t>(chunk, static_cast<int64_t>(tokens.size()) - start);
    SequenceStep s{id, slot, start, tokens.subspan(static_cast<size_t>(start), static_cast<size_t>(n)), true};
    auto logits = m.runner->step(std::span(&s, 1));
    all.insert(all.end(), logits.begin(), logits.end());
  }
  m.kv->release(id);
  m.state->release(slot);
  return all;
}

// Share of rows whose argmax agrees.
double top1_agreement(std::span<const float> a, std::span<const float> b, int64_t vocab) {
  const size_t rows = a.size() / static_cast<size_t>(vocab);
  size_t same = 0;
  for (size_t r = 0; r < rows; ++r)
    same += ReferenceModel::argmax(a.subspan(r * vocab, vocab)) == ReferenceModel::argmax(b.subspan(r * vocab, vocab));
  return static_cast<double>(same) / static_cast<double>(rows);
}

// Chunked and whole prefill run different forms of some ops (the delta rule's recurrent and chunked forms, other row
// blocks), which agree to ~1e-6 in f32; an int8 cache rounds K and V to codes, and a value that lands by a rounding
// boundary flips one code, which moves the logits by ~1e-5. The bound allows a few flips; a chunking bug (a lost or
// repeated token, a wrong position) moves them by the int8 error itself, ~1e-2, or more.
constexpr double kInt8ChunkingTolerance = 5e-5;

class Int8KvModel : public ::testing::TestWithParam<std::string> {};

TEST_P(Int8KvModel, ChunkedPrefillEqualsUnchunked) {
  ReferenceModel m(GetParam(), DType::kI8);
  ASSERT_EQ(m.kv->dtype(), DType::kI8);
  auto index = testing::reference_index();
  const auto tokens = testing::read_i32(index["models"][GetParam()]["prompts"].back()["tokens"]);  // 333 tokens
  const auto f32_logits = testing::read_f32(index["models"][GetParam()]["prompts"].back()["logits"]);
  const auto whole = prefill_all(m, tokens, 1, 1 << 20);
  for (int64_t chunk : {1, 7, 16, 17, 64, 100}) {
    const auto got = prefill_all(m, tokens, 2, chunk);
    EXPECT_LE(testing::rel_err(got, whole), kInt8ChunkingTolerance) << "chunk " << chunk;
  }
  // Against transformers' f32 logits: the int8 rounding of K and V, nothing more.
  const double err = testing::rel_err(whole, f32_logits);
  EXPECT_LE(err, 2e-2) << GetParam();
  EXPECT_GT(err, 1e-6) << GetParam() << ": an int8 cache that matches f32 exactly is not quantizing";
  EXPECT_GE(top1_agreement(whole, f32_logits, m.config.vocab_size), 0.97) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Reference, Int8KvModel, ::testing::Values("qwen35_tied", "qwen35_untied", "qwen3_dense"));

TEST(Int8KvTiny, ChunkedPrefillEqualsUnchunkedOnTheDefaultModel) {
  ReferenceModel m(ReferenceModel::Packed{kTinyArtifact}, DType::kI8);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 150; ++i) tokens.push_back(static_cast<int32_t>((i * 2654435761u) % 8000));
  const auto whole = prefill_all(m, tokens, 1, 1 << 20);
  for (int64_t chunk : {1, 16, 33})
    EXPECT_LE(testing::rel_err(prefill_all(m, tokens, 2, chunk), whole), kInt8ChunkingTolerance) << chunk;
}

using testing::Collector;

// Greedy continuations of two concurrent requests through the engine loop with an int8 cache.
std::vector<std::vector<int32_t>> greedy_through_engine(const ReferenceModel& m, int64_t prefill_chunk,
                                                        const std::vector<std::vector<int32_t>>& prompts) {
  Engine e(*m.artifact, m.config,
           {.max_context = 512, .prefill_chunk = prefill_chunk, .max_concurrency = 2, .kv_dtype = DType::kI8, .threads = 2});
  std::vector<std::shared_ptr<Collector>> cs;
  for (const auto& p : prompts) {
    EngineRequest r;
    r.prompt = p;
    r.sampling.greedy = true;
    r.max_tokens = 24;
    cs.push_back(std::make_shared<Collector>());
    EXPECT_TRUE(e.submit(std::move(r), cs.back()).accepted());
  }
  std::vector<std::vector<int32_t>> out;
  for (auto& c : cs) {
    c->wait();
    EXPECT_EQ(c->result.reason, FinishReason::kOutputLimit) << c->result.error;
    out.push_back(c->tokens);
  }
  return out;
}

TEST(Int8KvEngine, GreedyTokensDoNotDependOnThePrefillChunk) {
  for (const char* name : {"qwen35_untied", "qwen3_dense"}) {
    ReferenceModel m(name, DType::kI8);
    auto index = testing::reference_index();
    std::vector<std::vector<int32_t>> prompts{testing::read_i32(index["models"][name]["prompts"][2]["tokens"]),
                                              testing::read_i32(index["models"][name]["prompts"][3]["tokens"])};
    const auto whole = greedy_through_engine(m, 2048, prompts);
    ASSERT_EQ(whole.size(), 2u);
    EXPECT_EQ(whole[0].size(), 24u);
    for (int64_t chunk : {5, 16}) EXPECT_EQ(greedy_through_engine(m, chunk, prompts), whole) << name << " chunk " << chunk;
  }
}

}  // namespace
}  // namespace ninfer
