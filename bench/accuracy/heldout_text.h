// Owns the accuracy benchmark's held-out token stream: the committed held-out documents, tokenized as training did.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace ninfer::bench {

struct HeldoutText {
  std::vector<int32_t> tokens;  // every document's ids followed by <|endoftext|>, documents in file order
  int64_t documents = 0;
  int64_t characters = 0;       // bytes of document text
};

// Reads a JSONL file of {"kind", "source", "text"} records (bench/accuracy/data/heldout.jsonl) and tokenizes each
// text as tools/train_tiny/train.py did: HF encode without added special tokens, control tokens written in the
// document recognised (Tokenizer::encode_with_special), then the id of <|endoftext|>. Throws Error naming the file
// and line for unreadable or malformed input.
HeldoutText load_heldout(const std::string& jsonl_path, const Tokenizer& tokenizer);

}  // namespace ninfer::bench
