// Owns the streaming detokenizer: raw token bytes buffered until they decode unambiguously.
#include "engine/tokenizer/detokenizer.h"

#include "engine/tokenizer/byte_level.h"

namespace ninfer {

void Detokenizer::add(int32_t id) {
  std::string_view bytes = tokenizer_.token_bytes(id);
  if (skip_special_ && tokenizer_.is_special(id)) return;
  pending_.append(bytes);
}

std::string Detokenizer::take() {
  std::string out;
  size_t used = byte_level::append_lossy_utf8(pending_, out, false);
  pending_.erase(0, used);
  return out;
}

std::string Detokenizer::push(int32_t id) {
  add(id);
  return take();
}

std::string Detokenizer::push(std::span<const int32_t> ids) {
  for (int32_t id : ids) add(id);
  return take();
}

std::string Detokenizer::finish() {
  std::string out;
  byte_level::append_lossy_utf8(pending_, out, true);
  pending_.clear();
  return out;
}

}  // namespace ninfer
