// Owns the per-row arithmetic of the W4A4 activation quantizer that both quantizer kernels share (nvfp4.cu's one CTA
// per row, nvfp4_gemv.cu's several CTAs per row): the row's global scale from max|x| and finiteness, and one code byte
// (two elements) with its block's E4M3 scale, written into the activation layout (gemm.h Nvfp4ActLayout). Sharing it
// keeps the two kernels bit-identical to each other and to nvfp4_quantize_row.
#pragma once

#include <cstdint>

#include "kernels/common/nvfp4.cuh"
#include "kernels/gemm/gemm.h"

namespace ninfer::kern {

// The row's quantizer constants: g = the input scale when > 0, else max|x| / 2688 (nvfp4_weight_scale_2's
// amax / (6 · 448)); NaN when the row holds a non-finite value; `special` rows (NaN, or g == 0) get codes 0 and
// scales 1.0.
struct Nvfp4RowScale {
  float g, six_g;
  bool special;
};
__device__ __forceinline__ Nvfp4RowScale nvfp4_row_scale(float amax, bool bad, float input_scale) {
  Nvfp4RowScale r;
  r.g = input_scale > 0.0f ? input_scale : __fdiv_rn(amax, 2688.0f);
  if (bad) r.g = __uint_as_float(0x7FC00000u);
  r.special = bad || r.g == 0.0f;
  r.six_g = __fmul_rn(6.0f, r.g);
  return r;
}

// Code byte j of a row (elements 2j, 2j + 1; block_amax = max|x| over its 16-block): the code byte, its 2·e2m1 int8
// pair, and for the block's first byte (j % 8 == 0) the E4M3 scale byte and its f32 value. IEEE division and the
// CPU codecs' comparisons, as nvfp4_quantize_row.
__device__ __forceinline__ void nvfp4_quantize_byte(float x0, float x1, float block_amax, const Nvfp4RowScale& rs,
                                                    const Nvfp4ActLayout& L, uint8_t* out, int64_t j) {
  uint32_t sc = 0x38, code = 0;  // e4m3(1.0)
  if (!rs.special) {
    float s = __fdiv_rn(block_amax, rs.six_g);
    if (s == 0.0f) s = 1.0f;
    s = s < 1.0f / 512.0f ? 1.0f / 512.0f : (448.0f < s ? 448.0f : s);
    sc = e4m3_encode(s);
    const float den = __fmul_rn(e4m3_decode(sc), rs.g);
    code = e2m1_encode(__fdiv_rn(x0, den)) | (static_cast<uint32_t>(e2m1_encode(__fdiv_rn(x1, den))) << 4);
  }
  out[L.codes + j] = static_cast<uint8_t>(code);
  int lo, hi;
  e2m1x8_to_i8x2(code, lo, hi);
  *reinterpret_cast<uint16_t*>(out + L.i8 + 2 * j) = static_cast<uint16_t>(lo & 0xFFFF);
  if (j % 8 == 0) {
    out[L.scales + j / 8] = static_cast<uint8_t>(sc);
    reinterpret_cast<float*>(out + L.scale_f32)[j / 8] = e4m3_decode(sc);
  }
}

}  // namespace ninfer::kern
