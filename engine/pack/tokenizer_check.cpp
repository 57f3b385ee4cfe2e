// Owns the pack-time tokenizer.json check (see tokenizer_check.h).
#include "engine/pack/tokenizer_check.h"

#include <spdlog/spdlog.h>

#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer.h"

namespace ninfer {

void check_packable_tokenizer(const std::string& tokenizer_json, const std::string& source) {
  try {
    Tokenizer::from_json(tokenizer_json);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kUnsupported)
      fail(ErrorKind::kUnsupported,
           "{}: ninfer-serve could not load this tokenizer, so it is refused at pack time: {} (docs/tokenizer.md "
           "lists what is supported)",
           source, e.what());
    spdlog::warn("{}: tokenizer.json does not load as a tokenizer ({}); the artifact can only be driven with token ids",
                 source, e.what());
  }
}

}  // namespace ninfer
