// Fuzz target: streaming detokenization. Any id sequence pushed one token (or a few) at a time, then finish(),
// gives exactly Tokenizer::decode() of the whole sequence, never holds more than 3 bytes, and always emits UTF-8.
#include <span>

#include "engine/core/error.h"
#include "engine/tokenizer/detokenizer.h"
#include "engine/tokenizer/unicode.h"
#include "tests/fuzz/fuzz_tokenizer_common.h"

NINFER_FUZZ_TARGET {
  if (size < 1) return 0;
  const ninfer::Tokenizer& tok = ninfer::fuzz::fuzz_tokenizer().tokenizer;
  const bool skip_special = data[0] & 1;
  const size_t group = 1 + ((data[0] >> 1) & 3);  // tokens per push
  std::vector<int32_t> ids;
  for (size_t i = 1; i + 1 < size; i += 2)
    ids.push_back(static_cast<int32_t>((data[i] | (data[i + 1] << 8)) % tok.vocab_size()));
  std::vector<int32_t> known;
  for (int32_t id : ids) {
    try {
      (void)tok.token_bytes(id);
      known.push_back(id);
    } catch (const ninfer::Error&) {  // a gap in the id space: the engine never produces it (padded vocabularies)
    }
  }
  ninfer::Detokenizer d(tok, skip_special);
  std::string streamed;
  for (size_t i = 0; i < known.size(); i += group) {
    const size_t n = std::min(group, known.size() - i);
    const std::string piece = n == 1 ? d.push(known[i]) : d.push(std::span<const int32_t>(known.data() + i, n));
    NINFER_FUZZ_CHECK(d.pending_bytes() <= 3);
    streamed += piece;
  }
  streamed += d.finish();
  NINFER_FUZZ_CHECK(d.pending_bytes() == 0);
  const std::string whole = tok.decode(known, skip_special);
  NINFER_FUZZ_CHECK(streamed == whole, streamed);
  for (size_t i = 0; i < streamed.size();) {
    char32_t cp;
    const int n = ninfer::unicode::decode_utf8(streamed, i, &cp);
    NINFER_FUZZ_CHECK(cp != ninfer::unicode::kInvalid, "the stream emitted invalid UTF-8");
    i += static_cast<size_t>(n);
  }
  return 0;
}
