// Owns overflow-checked int64 arithmetic: GCC / Clang builtins where they exist, the same answers by comparison under
// MSVC. Each returns true when the exact result does not fit (then *r is unspecified).
#pragma once

#include <cstdint>
#include <limits>

namespace ninfer {

inline bool add_overflows(int64_t a, int64_t b, int64_t* r) {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_add_overflow(a, b, r);
#else
  if ((b > 0 && a > std::numeric_limits<int64_t>::max() - b) || (b < 0 && a < std::numeric_limits<int64_t>::min() - b))
    return true;
  *r = a + b;
  return false;
#endif
}

inline bool sub_overflows(int64_t a, int64_t b, int64_t* r) {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_sub_overflow(a, b, r);
#else
  if ((b < 0 && a > std::numeric_limits<int64_t>::max() + b) || (b > 0 && a < std::numeric_limits<int64_t>::min() + b))
    return true;
  *r = a - b;
  return false;
#endif
}

inline bool mul_overflows(int64_t a, int64_t b, int64_t* r) {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_mul_overflow(a, b, r);
#else
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  if (a == 0 || b == 0) {
    *r = 0;
    return false;
  }
  if ((a == -1 && b == kMin) || (b == -1 && a == kMin)) return true;
  if (a > 0 ? (b > 0 ? a > kMax / b : b < kMin / a) : (b > 0 ? a < kMin / b : a < kMax / b)) return true;
  *r = a * b;
  return false;
#endif
}

}  // namespace ninfer
