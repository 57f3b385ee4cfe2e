#include "engine/pack/vocab_padding.h"

#include <algorithm>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/core/error.h"

namespace ninfer {

int64_t tokenizer_id_count(const std::string& tokenizer_json, const std::string& source) {
  nlohmann::json t;
  try {
    t = nlohmann::json::parse(tokenizer_json);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::kInvalidArgument, "{}: tokenizer.json is not JSON: {}", source, e.what());
  }
  std::vector<int64_t> ids;
  if (t.contains("model") && t["model"].is_object() && t["model"].contains("vocab")) {
    const auto& vocab = t["model"]["vocab"];
    if (vocab.is_object()) {  // BPE, WordPiece, WordLevel: token → id
      for (const auto& [token, id] : vocab.items())
        if (id.is_number_integer()) ids.push_back(id.get<int64_t>());
    } else if (vocab.is_array()) {  // Unigram: [token, score] at index = id
      for (size_t i = 0; i < vocab.size(); ++i) ids.push_back(static_cast<int64_t>(i));
    }
  }
  if (t.contains("added_tokens") && t["added_tokens"].is_array())
    for (const auto& a : t["added_tokens"])
      if (a.is_object() && a.contains("id") && a["id"].is_number_integer()) ids.push_back(a["id"].get<int64_t>());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] != static_cast<int64_t>(i))
      fail(ErrorKind::kUnsupported, "{}: tokenizer.json has no token for id {} (its {} ids are not 0..{}); an id "
           "without a token inside the vocabulary cannot be kept from being sampled", source, i, ids.size(),
           ids.size() - 1);
  return static_cast<int64_t>(ids.size());
}

void drop_padded_vocab(int64_t ids, ModelConfig& config, TensorPlan& plan, nlohmann::json& meta,
                       const std::string& source) {
  const int64_t vocab = config.vocab_size;
  if (ids == 0 || ids == vocab) return;
  if (ids > vocab)
    fail(ErrorKind::kInvalidArgument, "{}: tokenizer.json defines {} token ids but vocab_size is {}: ids from {} on "
         "have no embedding row", source, ids, vocab, vocab);
  for (const char* name : {"model.embed_tokens.weight", "lm_head.weight"}) {
    const PlannedTensor* t = plan.find(name);
    if (!t) continue;  // a missing tensor is check_weights' error
    if (t->shape.size() != 2 || t->shape[0] != vocab || !(t->dtype == DType::kF32 || t->dtype == DType::kBF16 ||
                                                          t->dtype == DType::kF16))
      fail(ErrorKind::kUnsupported, "{}: {} must be a plain [vocab_size {}, hidden] tensor to drop the padded ids, "
           "it is {} of {} dims", t->origin, name, vocab, dtype_name(t->dtype), t->shape.size());
    PlannedTensor cut = *t;
    cut.shape[0] = ids;
    const uint64_t keep = *tensor_storage_bytes(cut.dtype, cut.shape);
    if (!cut.bytes.empty()) {
      cut.bytes = cut.bytes.first(keep);
    } else {  // a converted tensor: stream only its first `keep` bytes (rows are stored row-major)
      cut.produce = [produce = t->produce, keep](const ByteSink& sink) {
        uint64_t left = keep;
        produce([&](std::span<const std::byte> piece) {
          const uint64_t n = std::min<uint64_t>(left, piece.size());
          if (n > 0) sink(piece.first(n));
          left -= n;
        });
      };
    }
    plan.replace(std::move(cut));
  }
  nlohmann::json& cfg = meta["config"].contains("text_config") && meta["config"]["text_config"].is_object()
                            ? meta["config"]["text_config"]
                            : meta["config"];
  cfg["vocab_size"] = ids;
  meta["vocab_padding"] = {{"vocab_size", vocab}, {"tokenizer_ids", ids}, {"dropped_rows", vocab - ids}};
  config.vocab_size = ids;
  spdlog::warn("{}: vocab_size {} pads the tokenizer's {} ids: the {} rows without a token are dropped from the "
               "embedding and lm_head, so they can never be produced", source, vocab, ids, vocab - ids);
}

}  // namespace ninfer
