// Owns the int8 KV cache's CPU inner loops (quantize a row, q·k and p·v against int8 codes) and their selection.
#pragma once

#include <cstdint>

namespace ninfer::cpu {

// The int8 KV format (docs/kv-cache.md): one row = head_dim int8 codes + one f32 scale, value = code · scale.
//   amax  = max_i |x_i|;  scale = amax / 127 (f32 division);  code_i = RNE(x_i / scale) (f32 division), in [−127, 127]
//   amax = 0 gives scale 0 and all codes 0. −128 is never produced.
// Every variant computes bit-identical codes and scales (the divisions are IEEE, the rounding is to nearest even).
struct Int8KvKernels {
  const char* name;
  // Quantizes x[0, n) into q and returns the scale. Sets *non_finite when x holds an inf or NaN (codes are then
  // meaningless; the caller refuses the write).
  float (*quantize)(const float* x, int8_t* q, int64_t n, bool* non_finite);
  // Σ a_i · q_i (the codes converted to f32 exactly; the caller multiplies by the row's scale).
  float (*dot)(const float* a, const int8_t* q, int64_t n);
  // y_i += a · q_i (the caller folds the row's scale into a).
  void (*axpy)(float a, const int8_t* q, float* y, int64_t n);
};

const Int8KvKernels& int8_kv_scalar_kernels();
// nullptr when the build has no AVX2 variant (non-x86) or the CPU lacks AVX2 or FMA.
const Int8KvKernels* int8_kv_avx2_kernels();

}  // namespace ninfer::cpu
