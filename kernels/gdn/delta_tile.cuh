// Owns the register tile of a delta-rule state slice that the recurrent and the chunked kernels share: a CTA of
// kTileThreads threads holds S[0..dk) × [v0, v0 + kTileCols) of one (sequence, value head) in registers; thread
// (kth = tid % 8, vth = tid / 8) owns rows r·8 + kth (r < KT) and the 4 columns v0 + 4·vth.. (sums over k are
// butterfly shuffles over the 8 lanes of one kth group, so every lane of the group gets the same bits).
#pragma once

#include <cstdint>

#include "kernels/common/reduce.cuh"
#include "kernels/gdn/gdn.h"

namespace ninfer::kern::gdn {

constexpr int kKThreads = 8;                           // threads along k (consecutive lanes)
constexpr int kColsPerThread = 4;                      // columns (v) per thread
constexpr int kVThreads = 8;                           // threads along v
constexpr int kTileThreads = kKThreads * kVThreads;    // 64 threads per CTA
constexpr int kTileCols = kColsPerThread * kVThreads;  // 32 columns of S per CTA

// Σ over the 8 k-lanes (lane bits 0..2); a + b == b + a, so all 8 lanes end with identical values.
__device__ __forceinline__ float ksum(float v) { return warp_sum<kKThreads>(v); }

template <int KT>
struct StateTile {
  static constexpr int kRowsPadded = KT * kKThreads;  // dk rounded up
  float s[KT][kColsPerThread];
  int kth, col0;  // first row (kth) and first column of this thread

  __device__ __forceinline__ void init(int tid, int v0) {
    kth = tid % kKThreads;
    col0 = v0 + (tid / kKThreads) * kColsPerThread;
  }
  // S of one head [dk, dv] (row-major) → the tile; rows ≥ dk and columns ≥ dv read as 0. vec: dv % 4 == 0 and
  // S 16-byte aligned.
  __device__ __forceinline__ void load(const float* S, int dk, int dv, bool vec) {
#pragma unroll
    for (int r = 0; r < KT; ++r) {
      const int k = r * kKThreads + kth;
      const float* row = S + static_cast<int64_t>(k) * dv + col0;
      if (vec && k < dk && col0 < dv) {
        const float4 f = *reinterpret_cast<const float4*>(row);
        s[r][0] = f.x, s[r][1] = f.y, s[r][2] = f.z, s[r][3] = f.w;
      } else {
#pragma unroll
        for (int c = 0; c < kColsPerThread; ++c) s[r][c] = (k < dk && col0 + c < dv) ? row[c] : 0.0f;
      }
    }
  }
  __device__ __forceinline__ void store(float* S, int dk, int dv, bool vec) const {
#pragma unroll
    for (int r = 0; r < KT; ++r) {
      const int k = r * kKThreads + kth;
      if (k >= dk) continue;
      float* row = S + static_cast<int64_t>(k) * dv + col0;
      if (vec) {
        if (col0 < dv) *reinterpret_cast<float4*>(row) = make_float4(s[r][0], s[r][1], s[r][2], s[r][3]);
      } else {
#pragma unroll
        for (int c = 0; c < kColsPerThread; ++c)
          if (col0 + c < dv) row[c] = s[r][c];
      }
    }
  }
  // out[c] = Σ_k x[k] · S[k][col0 + c] for the vector x (smem, kRowsPadded entries, zero past dk), on every lane.
  __device__ __forceinline__ void dot_rows(const float* x, float (&out)[kColsPerThread]) const {
#pragma unroll
    for (int c = 0; c < kColsPerThread; ++c) out[c] = 0.0f;
#pragma unroll
    for (int r = 0; r < KT; ++r) {
      const float xr = x[r * kKThreads + kth];
#pragma unroll
      for (int c = 0; c < kColsPerThread; ++c) out[c] = fmaf(s[r][c], xr, out[c]);
    }
#pragma unroll
    for (int c = 0; c < kColsPerThread; ++c) out[c] = ksum(out[c]);
  }
};

// The state of head h in state row `slot`.
__device__ __forceinline__ float* head_state(const DeltaRuleView& p, int slot, int h) {
  return p.state + (static_cast<int64_t>(slot) * p.nv + h) * p.dk * p.dv;
}

}  // namespace ninfer::kern::gdn
