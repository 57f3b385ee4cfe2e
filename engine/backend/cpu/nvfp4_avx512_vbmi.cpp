// The AVX-512 W4A4 lane kernel built with VBMI as well (nvfp4_lanes_avx512.inc
// with NINFER_LANES_VBMI = 1: the nibble lookups are one vpermb each), for
// nvfp4_avx512_vbmi_kernels() (nvfp4_avx512.cpp), which calls it only after the
// runtime CPU check. Same terms in the same order as the VNNI build: the same
// bits.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge operand of their masked builtins and then
// warn about it wherever they are inlined (avx512fintrin.h); nothing in this file reads such a value.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <algorithm>
#include <array>
#include <utility>

#include "engine/backend/cpu/kernels.h"
#include "engine/backend/cpu/nvfp4_linear.h"
#include "engine/core/error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NINFER_HAVE_AVX512_VBMI_VARIANT 1
#include <immintrin.h>
#endif

namespace ninfer::cpu {

#if NINFER_HAVE_AVX512_VBMI_VARIANT

#define NINFER_AVX512                                                          \
  __attribute__((                                                              \
      target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,avx512vbmi,fma")))

namespace {
#define NINFER_LANES_VBMI 1
#include "engine/backend/cpu/nvfp4_lanes_avx512.inc"
} // namespace

NINFER_AVX512 void nvfp4_w4a4_lanes_vbmi(const Nvfp4Weight &w,
                                         const Nvfp4A4Rows &a, int64_t m0,
                                         int rows, int64_t n0, int64_t n1,
                                         float *y, int64_t ys, bool acc) {
  w4a4_lanes(w, a, m0, rows, n0, n1, y, ys, acc);
}

#else

void nvfp4_w4a4_lanes_vbmi(const Nvfp4Weight &, const Nvfp4A4Rows &, int64_t,
                           int, int64_t, int64_t, float *, int64_t, bool) {
  fail(ErrorKind::kInternal, "nvfp4: the AVX-512 VBMI kernel was called in a "
                             "build without it (its table is null here)");
}

#endif

} // namespace ninfer::cpu
