// Owns building the reduced-vocabulary draft lm_head (--draft-vocab): corpus token counts, id choice, row copy.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/pack/tensor_plan.h"
#include "engine/tokenizer/tokenizer.h"

namespace ninfer {

struct DraftVocabOptions {
  int64_t vocab = 0;                // N; 0 = no draft head
  std::vector<std::string> corpus = {};  // files or directories (see read_draft_corpus)
};

// The corpus text: each path is a file, or a directory read recursively (sorted, regular files whose
// extension is one of .py .h .hpp .hh .c .cc .cpp .txt .md .rst). A ".jsonl" file contributes the "text"
// field of each line (tools/train_tiny/build_corpus.py's train.jsonl). Throws naming the path.
std::vector<std::string> read_draft_corpus(const std::vector<std::string>& paths);

struct DraftVocab {
  std::vector<int32_t> ids;     // ascending full-vocabulary ids, size N
  std::vector<int32_t> forced;  // the ids included regardless of frequency
  uint64_t corpus_tokens = 0;
  uint64_t covered_tokens = 0;  // corpus tokens whose id is in `ids`
};

// Counts token frequencies of `documents` (Tokenizer::encode, no special-token recognition), forces in
// every added token whose content occurs in `chat_template` (the control tokens the template emits:
// <|im_start|>, <|im_end|>, <think>, </think>, ...) and every id in `eos_ids`, and fills up to `n` with
// the most frequent remaining ids (ties: lower id first). Throws when n exceeds the vocabulary or is
// smaller than the forced set.
DraftVocab select_draft_vocab(const Tokenizer& tokenizer, const std::vector<std::string>& documents,
                              std::string_view chat_template, const std::vector<int32_t>& eos_ids, int64_t n);

// Adds draft_lm_head.ids (i32 [N]) and draft_lm_head.weight ([N, hidden], rows `ids` of `lm_head`, its dtype)
// to section draft_lm_head. `lm_head` must be a plain-dtype [vocab, hidden] tensor of the plan.
void plan_draft_lm_head(const DraftVocab& vocab, const PlannedTensor& lm_head, TensorPlan& plan);

}  // namespace ninfer
