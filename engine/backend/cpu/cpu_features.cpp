// The runtime x86-64 feature probe behind cpu_supports_avx2_fma_f16c(), cpu_supports_avx512_vnni() and
// cpu_supports_avx512_vbmi() (kernels.h).
// Kept apart from the SIMD kernel files so that it is compiled for the baseline ISA with every compiler (MSVC builds
// those files with /arch:AVX2 or /arch:AVX512, cmake/Warnings.cmake) and runs safely on any x86-64 CPU.
#include "engine/backend/cpu/kernels.h"

#if defined(_MSC_VER) && !defined(__clang__) && defined(_M_X64)
#include <immintrin.h>
#include <intrin.h>
#endif

namespace ninfer::cpu {

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)

bool cpu_supports_avx2_fma_f16c() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

bool cpu_supports_avx512_vnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma");
}

bool cpu_supports_avx512_vbmi() {
  __builtin_cpu_init();
  return cpu_supports_avx512_vnni() && __builtin_cpu_supports("avx512vbmi");
}

#elif defined(_MSC_VER) && defined(_M_X64)

namespace {

// CPUID leaves 1 and 7 plus the OS's XSAVE state (XGETBV): the instruction sets and whether the OS saves the
// YMM / ZMM registers on a context switch.
struct X86Features {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512vnni = false, avx512dq = false;
  bool avx512vbmi = false;
};

X86Features probe() {
  X86Features f;
  int r[4];
  __cpuid(r, 0);
  const int max_leaf = r[0];
  if (max_leaf < 7) return f;
  __cpuid(r, 1);
  const bool osxsave = (r[2] >> 27) & 1, avx = (r[2] >> 28) & 1;
  f.fma = (r[2] >> 12) & 1;
  f.f16c = (r[2] >> 29) & 1;
  if (!osxsave || !avx) return X86Features{};
  const unsigned long long xcr0 = _xgetbv(0);
  const bool ymm_state = (xcr0 & 0x6) == 0x6;     // XMM + YMM
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;   // + opmask, ZMM_Hi256, Hi16_ZMM
  if (!ymm_state) return X86Features{};
  __cpuidex(r, 7, 0);
  f.avx2 = (r[1] >> 5) & 1;
  if (zmm_state) {
    f.avx512f = (r[1] >> 16) & 1;
    f.avx512dq = (r[1] >> 17) & 1;
    f.avx512bw = (r[1] >> 30) & 1;
    f.avx512vl = (r[1] >> 31) & 1;
    f.avx512vnni = (r[2] >> 11) & 1;
    f.avx512vbmi = (r[2] >> 1) & 1;
  }
  return f;
}

const X86Features& features() {
  static const X86Features f = probe();
  return f;
}

}  // namespace

bool cpu_supports_avx2_fma_f16c() { return features().avx2 && features().fma && features().f16c; }

bool cpu_supports_avx512_vnni() {
  const X86Features& f = features();
  return f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni && f.avx512dq && f.fma;
}

bool cpu_supports_avx512_vbmi() { return cpu_supports_avx512_vnni() && features().avx512vbmi; }

#else  // not x86-64

bool cpu_supports_avx2_fma_f16c() { return false; }
bool cpu_supports_avx512_vnni() { return false; }
bool cpu_supports_avx512_vbmi() { return false; }

#endif

}  // namespace ninfer::cpu
