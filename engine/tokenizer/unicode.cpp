// Owns UTF-8 stepping, the two-stage character class table built from the generated ranges, and NFC.
#include "engine/tokenizer/unicode.h"

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

#include "engine/tokenizer/unicode_tables.h"

namespace ninfer::unicode {
namespace {

namespace ud = unicode_data;

constexpr char32_t kMaxCp = 0x110000;

// Two-stage table: block index per 256 code points, then one byte of class bits per code point.
struct ClassTable {
  std::vector<uint16_t> stage1;  // kMaxCp / 256 entries
  std::vector<uint8_t> stage2;   // blocks of 256

  ClassTable() {
    std::vector<uint8_t> flat(kMaxCp, 0);
    auto mark = [&](const ud::CodepointRange* r, size_t n, uint8_t bit) {
      for (size_t i = 0; i < n; ++i)
        for (char32_t cp = r[i].lo; cp <= r[i].hi; ++cp) flat[cp] |= bit;
    };
    mark(ud::kLetterRanges, ud::kLetterRangesCount, kLetter);
    mark(ud::kMarkRanges, ud::kMarkRangesCount, kMark);
    mark(ud::kNumberRanges, ud::kNumberRangesCount, kNumber);
    mark(ud::kNfcSensitiveRanges, ud::kNfcSensitiveRangesCount, kNfcSensitive);
    // Unicode White_Space (Oniguruma's \s in Unicode mode).
    static constexpr char32_t kWhite[] = {0x09,   0x0A,   0x0B,   0x0C,   0x0D,   0x20,   0x85,   0xA0,   0x1680,
                                          0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008,
                                          0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000};
    for (char32_t cp : kWhite) flat[cp] |= kSpace | kPySpace;
    // Python's str.isspace() adds the information separators U+001C..U+001F.
    for (char32_t cp = 0x1C; cp <= 0x1F; ++cp) flat[cp] |= kPySpace;

    stage1.resize(kMaxCp / 256);
    for (size_t block = 0; block < kMaxCp / 256; ++block) {
      const uint8_t* src = flat.data() + block * 256;
      size_t found = stage2.size() / 256;
      for (size_t b = 0; b < stage2.size() / 256; ++b) {
        if (std::equal(src, src + 256, stage2.data() + b * 256)) {
          found = b;
          break;
        }
      }
      if (found == stage2.size() / 256) stage2.insert(stage2.end(), src, src + 256);
      stage1[block] = static_cast<uint16_t>(found);
    }
  }
};

const ClassTable& class_table() {
  static const ClassTable table;
  return table;
}

uint8_t combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  const auto* begin = ud::kCombiningClasses;
  const auto* end = begin + ud::kCombiningClassesCount;
  const auto* it =
      std::upper_bound(begin, end, cp, [](char32_t c, const ud::CombiningClassRange& r) { return c < r.lo; });
  if (it == begin) return 0;
  --it;
  return cp <= it->hi ? it->ccc : 0;
}

// Hangul syllable arithmetic (Unicode 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

void decompose(char32_t cp, std::vector<char32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  const auto* begin = ud::kDecompositions;
  const auto* end = begin + ud::kDecompositionsCount;
  const auto* it = std::lower_bound(begin, end, cp, [](const ud::Decomposition& d, char32_t c) { return d.cp < c; });
  if (it != end && it->cp == cp) {
    out.insert(out.end(), ud::kDecompositionPool + it->offset, ud::kDecompositionPool + it->offset + it->length);
  } else {
    out.push_back(cp);
  }
}

char32_t compose_pair(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  const auto* begin = ud::kCompositions;
  const auto* end = begin + ud::kCompositionsCount;
  const auto* it =
      std::lower_bound(begin, end, std::pair{a, b}, [](const ud::CompositionPair& p, std::pair<char32_t, char32_t> k) {
        return p.first != k.first ? p.first < k.first : p.second < k.second;
      });
  if (it != end && it->first == a && it->second == b) return it->composite;
  return 0;
}

// NFC of a run of valid code points: decompose, reorder, compose.
void nfc_run(std::vector<char32_t>& cps, std::string& out) {
  std::vector<char32_t> d;
  d.reserve(cps.size() + 8);
  for (char32_t cp : cps) decompose(cp, d);
  // canonical ordering: stable sort of each run of non-starters by combining class
  std::vector<uint8_t> ccc(d.size());
  for (size_t i = 0; i < d.size(); ++i) ccc[i] = combining_class(d[i]);
  for (size_t i = 0; i < d.size();) {
    if (ccc[i] == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < d.size() && ccc[j] != 0) ++j;
    // insertion sort keeps it stable; runs are short
    for (size_t a = i + 1; a < j; ++a) {
      for (size_t b = a; b > i && ccc[b - 1] > ccc[b]; --b) {
        std::swap(ccc[b - 1], ccc[b]);
        std::swap(d[b - 1], d[b]);
      }
    }
    i = j;
  }
  // canonical composition
  size_t starter = SIZE_MAX;  // index into the output vector d (compacted in place)
  size_t w = 0;
  int last_ccc = -1;
  for (size_t i = 0; i < d.size(); ++i) {
    char32_t cp = d[i];
    int c = ccc[i];
    if (starter != SIZE_MAX) {
      bool blocked = last_ccc != -1 && (last_ccc == 0 || last_ccc >= c);
      // last_ccc == -1 means the previous output character is the starter itself
      if (!blocked) {
        char32_t comp = compose_pair(d[starter], cp);
        if (comp) {
          d[starter] = comp;
          continue;
        }
      }
    }
    if (c == 0) {
      starter = w;
      last_ccc = -1;
    } else {
      last_ccc = c;
    }
    d[w] = cp;
    ccc[w] = static_cast<uint8_t>(c);
    ++w;
  }
  for (size_t i = 0; i < w; ++i) append_utf8(out, d[i]);
}

}  // namespace

uint8_t char_class(char32_t cp) {
  if (cp >= kMaxCp) return 0;
  const ClassTable& t = class_table();
  return t.stage2[static_cast<size_t>(t.stage1[cp >> 8]) * 256 + (cp & 0xFF)];
}

int decode_utf8(std::string_view s, size_t i, char32_t* cp) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
  size_t left = s.size() - i;
  unsigned char b0 = p[0];
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  auto cont = [&](size_t k) { return k < left && (p[k] & 0xC0) == 0x80; };
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    if (cont(1)) {
      *cp = (char32_t(b0 & 0x1F) << 6) | (p[1] & 0x3F);
      return 2;
    }
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (cont(1) && cont(2)) {
      char32_t c = (char32_t(b0 & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
      if (c >= 0x800 && (c < 0xD800 || c > 0xDFFF)) {
        *cp = c;
        return 3;
      }
    }
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (cont(1) && cont(2) && cont(3)) {
      char32_t c =
          (char32_t(b0 & 0x07) << 18) | (char32_t(p[1] & 0x3F) << 12) | (char32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
      if (c >= 0x10000 && c < 0x110000) {
        *cp = c;
        return 4;
      }
    }
  }
  *cp = kInvalid;
  return 1;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool may_need_nfc(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    // two-byte sequences with a lead byte below 0xCC are code points below U+0300: never NFC-sensitive
    if (p[i] >= 0xC2 && p[i] < 0xCC && i + 1 < s.size() && (p[i + 1] & 0xC0) == 0x80) {
      i += 2;
      continue;
    }
    char32_t cp;
    int n = decode_utf8(s, i, &cp);
    if (cp != kInvalid && (char_class(cp) & kNfcSensitive)) return true;
    i += n;
  }
  return false;
}

std::string nfc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::vector<char32_t> run;
  for (size_t i = 0; i < s.size();) {
    char32_t cp;
    int n = decode_utf8(s, i, &cp);
    if (cp == kInvalid) {
      nfc_run(run, out);
      run.clear();
      out.push_back(s[i]);
    } else {
      run.push_back(cp);
    }
    i += n;
  }
  nfc_run(run, out);
  return out;
}

const char* tables_version() { return unicode_data::kUnicodeVersion; }

}  // namespace ninfer::unicode
