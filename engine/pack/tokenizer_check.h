// Owns ninfer-pack's check that the tokenizer.json it embeds is one that ninfer-serve can load.
#pragma once

#include <string>

namespace ninfer {

// Loads `tokenizer_json` with Tokenizer::from_json. A tokenizer feature ninfer does not reproduce (kUnsupported:
// a WordPiece model, a Metaspace pre-tokenizer, a Split behavior other than Isolated, ...) is refused here, at pack
// time, with the loader's message naming the field. A document that does not load as a tokenizer at all (kCorrupt:
// a stub without pre_tokenizer, as test checkpoints carry) is packed with a warning: like a checkpoint without
// tokenizer.json, the artifact can then only be driven with token ids.
void check_packable_tokenizer(const std::string& tokenizer_json, const std::string& source);

}  // namespace ninfer
