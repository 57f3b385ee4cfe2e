// Owns the declarations of the generated Unicode tables (tools/tokenizer/make_unicode_tables.py writes the .cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ninfer::unicode_data {

struct CodepointRange {
  char32_t lo, hi;  // inclusive
};
struct CombiningClassRange {
  char32_t lo, hi;
  uint8_t ccc;
};
struct Decomposition {
  char32_t cp;
  uint32_t offset;  // into kDecompositionPool
  uint32_t length;
};
struct CompositionPair {
  char32_t first, second, composite;
};

extern const char* const kUnicodeVersion;
extern const CodepointRange kLetterRanges[];
extern const size_t kLetterRangesCount;
extern const CodepointRange kMarkRanges[];
extern const size_t kMarkRangesCount;
extern const CodepointRange kNumberRanges[];
extern const size_t kNumberRangesCount;
extern const CodepointRange kNfcSensitiveRanges[];
extern const size_t kNfcSensitiveRangesCount;
extern const CombiningClassRange kCombiningClasses[];
extern const size_t kCombiningClassesCount;
extern const Decomposition kDecompositions[];  // sorted by cp; full (recursive) canonical decompositions
extern const size_t kDecompositionsCount;
extern const char32_t kDecompositionPool[];
extern const CompositionPair kCompositions[];  // sorted by (first, second)
extern const size_t kCompositionsCount;

}  // namespace ninfer::unicode_data
