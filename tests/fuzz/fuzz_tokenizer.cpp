// Fuzz target: tokenizer encode/decode round trip on ninfer-tiny's tokenizer. Valid UTF-8 text comes back as its
// NFC form; any bytes encode to in-vocabulary ids without a throw; encode() never yields a control token.
#include <algorithm>

#include "engine/tokenizer/unicode.h"
#include "tests/fuzz/fuzz_tokenizer_common.h"

namespace {

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    char32_t cp;
    const int n = ninfer::unicode::decode_utf8(s, i, &cp);
    if (cp == ninfer::unicode::kInvalid) return false;
    i += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

NINFER_FUZZ_TARGET {
  const auto& [tok, nfc] = ninfer::fuzz::fuzz_tokenizer();
  const std::string_view text = ninfer::fuzz::as_text(data, size);
  const std::vector<int32_t> ids = tok.encode(text);
  for (int32_t id : ids) {
    NINFER_FUZZ_CHECK(id >= 0 && id < tok.vocab_size());
    NINFER_FUZZ_CHECK(!tok.is_special(id), "encode() produced a control token");
  }
  const std::string back = tok.decode(ids);
  if (valid_utf8(text)) {
    const std::string expected = nfc ? ninfer::unicode::nfc(text) : std::string(text);
    NINFER_FUZZ_CHECK(back == expected, back);
    NINFER_FUZZ_CHECK(tok.encode(back) == tok.encode(expected));
  }
  // Trusted text: control-token strings become their ids; still in the vocabulary, still decodable.
  const std::vector<int32_t> special = tok.encode_with_special(text);
  for (int32_t id : special) NINFER_FUZZ_CHECK(id >= 0 && id < tok.vocab_size());
  (void)tok.decode(special, true);
  return 0;
}
