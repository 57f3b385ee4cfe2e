// Owns the Unicode primitives of the tokenizer: UTF-8 stepping, character classes, NFC normalization.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ninfer::unicode {

// Character class bits (one lookup per code point).
enum : uint8_t {
  kLetter = 1,         // \p{L}
  kMark = 2,           // \p{M}
  kNumber = 4,         // \p{N}
  kSpace = 8,          // regex \s: the Unicode White_Space property (Oniguruma's \s)
  kPySpace = 16,       // Python str.isspace() (what Jinja's |trim strips)
  kNfcSensitive = 32,  // NFC may change a string that contains it
};

// Class bits of a code point; code points past U+10FFFF have none.
uint8_t char_class(char32_t cp);

// Decodes one code point at `s[i]`. Returns its length in bytes (1..4) and stores the code point. An invalid or
// truncated sequence yields length 1 and cp = kInvalid (a byte that belongs to no character class).
inline constexpr char32_t kInvalid = 0xFFFFFFFF;
int decode_utf8(std::string_view s, size_t i, char32_t* cp);

// Appends the UTF-8 form of `cp` (must be a Unicode scalar value).
void append_utf8(std::string& out, char32_t cp);

// True when `s` may change under NFC (a fast scan; false means NFC(s) == s).
bool may_need_nfc(std::string_view s);

// Unicode NFC of `s`. Bytes that are not valid UTF-8 pass through unchanged and block composition across them.
std::string nfc(std::string_view s);

// The Unicode version the tables come from.
const char* tables_version();

}  // namespace ninfer::unicode
