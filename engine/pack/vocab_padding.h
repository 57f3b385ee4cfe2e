// Owns dropping a padded vocabulary's tokenless ids at pack time (config vocab_size > the tokenizer's ids).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/model/model_config.h"
#include "engine/pack/tensor_plan.h"

namespace ninfer {

// How many token ids tokenizer.json defines: its model vocabulary plus its added tokens, which must be exactly
// 0..n-1 (a hole would be an id without a token that stays producible). 0 when it lists none.
int64_t tokenizer_id_count(const std::string& tokenizer_json, const std::string& source);

// With `ids` < config.vocab_size, keeps the first `ids` rows of model.embed_tokens.weight and lm_head.weight, sets
// vocab_size in config and in meta["config"] (text_config's for a nested config), and records
// meta["vocab_padding"] = {vocab_size, tokenizer_ids, dropped_rows}: no later stage (sampling, drafting, speculative
// verification, logprobs) can then produce an id without a token. `ids` > vocab_size is an error; 0 changes nothing.
void drop_padded_vocab(int64_t ids, ModelConfig& config, TensorPlan& plan, nlohmann::json& meta,
                       const std::string& source);

}  // namespace ninfer
