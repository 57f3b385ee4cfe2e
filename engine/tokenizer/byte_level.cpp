// Owns the ByteLevel alphabet tables and the lossy UTF-8 decoder.
#include "engine/tokenizer/byte_level.h"

#include "engine/tokenizer/unicode.h"

namespace ninfer::byte_level {
namespace {

struct Alphabet {
  std::array<char32_t, 256> to_char{};
  std::array<int16_t, 512> to_byte{};  // every alphabet code point is below U+0144

  Alphabet() {
    to_byte.fill(-1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
      to_char[b] = cp;
      to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

// Length of the valid sequence or maximal subpart at `p` (Unicode Table 3-7 well-formed byte sequences).
// Returns {length, valid, truncated}: truncated means the bytes ran out inside a so-far valid prefix.
struct Step {
  size_t len;
  bool valid;
  bool truncated;
};

Step step(const unsigned char* p, size_t left) {
  unsigned char b0 = p[0];
  if (b0 < 0x80) return {1, true, false};
  int need;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {1, false, false};
  }
  for (int k = 1; k <= need; ++k) {
    if (static_cast<size_t>(k) >= left) return {static_cast<size_t>(k), false, true};
    unsigned char b = p[k];
    bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return {static_cast<size_t>(k), false, false};
  }
  return {static_cast<size_t>(need) + 1, true, false};
}

}  // namespace

char32_t byte_to_char(uint8_t b) { return alphabet().to_char[b]; }

int char_to_byte(char32_t cp) { return cp < 512 ? alphabet().to_byte[cp] : -1; }

bool vocab_string_to_bytes(std::string_view s, std::string& out) {
  out.clear();
  for (size_t i = 0; i < s.size();) {
    char32_t cp;
    int n = unicode::decode_utf8(s, i, &cp);
    int b = cp == unicode::kInvalid ? -1 : char_to_byte(cp);
    if (b < 0) return false;
    out.push_back(static_cast<char>(b));
    i += n;
  }
  return true;
}

size_t append_lossy_utf8(std::string_view bytes, std::string& out, bool final_chunk) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t i = 0, n = bytes.size();
  while (i < n) {
    if (p[i] < 0x80) {  // ASCII run
      size_t j = i;
      while (j < n && p[j] < 0x80) ++j;
      out.append(bytes.data() + i, j - i);
      i = j;
      continue;
    }
    Step s = step(p + i, n - i);
    if (s.truncated && !final_chunk) return i;
    if (s.valid) {
      out.append(bytes.data() + i, s.len);
    } else {
      out.append("\xEF\xBF\xBD");
    }
    i += s.len;
  }
  return i;
}

}  // namespace ninfer::byte_level
