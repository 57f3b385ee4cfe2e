// Owns the ByteLevel alphabet (GPT-2's byte <-> printable character map) and lossy UTF-8 decoding of byte strings.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ninfer::byte_level {

// The code point that stands for byte `b` in tokenizer.json vocab strings.
char32_t byte_to_char(uint8_t b);

// The byte a vocab-string code point stands for, or -1 if `cp` is not in the alphabet.
int char_to_byte(char32_t cp);

// Converts a tokenizer.json vocab string (ByteLevel alphabet) to the raw bytes it stands for. Returns false when
// a code point is not in the alphabet.
bool vocab_string_to_bytes(std::string_view s, std::string& out);

// Appends `bytes` decoded as UTF-8 to `out`, each maximal invalid subpart replaced by U+FFFD (the WHATWG /
// Unicode "substitution of maximal subparts" rule that Rust's String::from_utf8_lossy and HF tokenizers use).
// With `final_chunk` false, a truncated but so far valid sequence at the end is left unconsumed; the return value
// is the number of bytes consumed.
size_t append_lossy_utf8(std::string_view bytes, std::string& out, bool final_chunk);

}  // namespace ninfer::byte_level
