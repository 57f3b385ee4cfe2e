// Paged causal GQA attention (decode and prefill rows in one launch): a CTA of 4 warps per (work item, kv head)
// reads K/V rows in place from the paged cache (f32/bf16/f16, or int8 codes with per-row f32 scales), scores them
// against the query vectors of the item held in registers, and keeps an online softmax in f32; split items write
// partials that attention_combine_kernel merges. Work plan: attention_plan.h (written on the device by attention_plan_kernel).
#include <cstdint>

#include "kernels/attention/attention.h"
#include "kernels/common/fault.cuh"
#include "kernels/common/load.cuh"
#include "kernels/common/reduce.cuh"
#include "kernels/common/rows.cuh"

namespace ninfer::kern {

namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * kWarpSize;
static_assert(kAttnMaxHeadDim <= 4 * kThreads, "attention_combine_kernel keeps 4 dims per thread");
constexpr unsigned kFull = 0xffffffffu;

// Four consecutive elements of a K/V row starting at element d (a multiple of 4); elements at or past n read as 0.
// `vec`: the row admits one aligned 4-element access (n % 4 == 0, aligned base and strides). They are kept packed
// (4·sizeof(T) bytes) until unpack4 widens them exactly at their use, so that rows loaded ahead of the math hold
// 1–4 registers per lane instead of 4 floats.
template <typename T>
using Raw4 = typename detail::VecWord<4 * static_cast<int>(sizeof(T))>::type;
template <typename T>
__device__ __forceinline__ Raw4<T> load4_raw(const T* row, int d, int n, bool vec) {
  Raw4<T> w;
  if (vec) {
    if (d < n) {
      w = *reinterpret_cast<const Raw4<T>*>(row + d);
    } else {
      memset(&w, 0, sizeof(w));
    }
    return w;
  }
  T e[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if (d + i < n) {
      e[i] = row[d + i];
    } else {
      memset(&e[i], 0, sizeof(T));
    }
  }
  memcpy(&w, e, sizeof(w));
  return w;
}
// int8 codes are widened exactly without I2F (a quarter/eighth-rate conversion): code c → the f32 with bits
// 0x4B0000 | (c + 128) is 2^23 + c + 128 exactly, and subtracting 2^23 + 128 leaves c exactly (one PRMT + FADD).
template <typename T>
__device__ __forceinline__ void unpack4(const Raw4<T>& w, float (&x)[4]) {
  if constexpr (sizeof(T) == 1) {
    const uint32_t u = static_cast<uint32_t>(w) ^ 0x80808080u;  // each byte: c + 128 (two's complement c)
#pragma unroll
    for (int i = 0; i < 4; ++i) x[i] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7540u | i)) - 8388736.0f;
  } else {
    T e[4];
    memcpy(e, &w, sizeof(w));
#pragma unroll
    for (int i = 0; i < 4; ++i) x[i] = to_float(e[i]);
  }
}

// v[j] holds this lane's partial dot for key j of a group of KG keys. Afterwards every lane holds the full
// warp-wide sum for key (lane >> (5 − log2 KG)): log2 KG halving exchanges, then a butterfly over the rest.
template <int KG>
__device__ __forceinline__ float transpose_sum(float (&v)[KG], int lane) {
#pragma unroll
  for (int n = KG, o = 16; n > 1; n >>= 1, o >>= 1) {
    const bool upper = (lane & o) != 0;
#pragma unroll
    for (int i = 0; i < n / 2; ++i) {
      const float keep = upper ? v[i + n / 2] : v[i];
      const float send = upper ? v[i] : v[i + n / 2];
      v[i] = keep + __shfl_xor_sync(kFull, send, o);
    }
  }
  float r = v[0];
#pragma unroll
  for (int o = 16 / KG; o > 0; o >>= 1) r += __shfl_xor_sync(kFull, r, o);
  return r;
}

template <int KG>
struct KeyLanes {
  static constexpr int kShift = KG == 8 ? 2 : KG == 4 ? 3 : 4;  // lane >> kShift = the key a lane holds
  static constexpr int kSpan = 1 << kShift;                     // lanes holding the same key
};

template <typename T, int NC, int MW>
__global__ void __launch_bounds__(kThreads, 1) paged_attention_kernel(const AttentionArgs a) {
  constexpr bool kI8 = sizeof(T) == 1;
  constexpr int KG = MW >= 8 ? 4 : kAttnKeyGroup;
  using Lanes = KeyLanes<KG>;
  constexpr int kDP = 128 * NC;  // padded head dim
  // Registers one key row takes per lane while its loads are in flight (4·NC elements kept packed, Raw4), and the
  // load batches that keep ≤ 64 such registers: K rows kKB at a time; the V rows of the whole group are issued with
  // the K rows (before the softmax, so K and V traffic overlap) when K + V of a group fit in that budget.
  // f32 rows with the widest q/o tiles (mw·nc = 8) get half the budget: 64 spills on sm_70.
  constexpr int kRowRegs = NC * static_cast<int>(sizeof(T));
  constexpr int kLoadRegs = sizeof(T) == 4 && MW * NC >= 8 ? 32 : 64;
  constexpr int kKB = KG * kRowRegs <= kLoadRegs ? KG : (kLoadRegs / kRowRegs >= 1 ? kLoadRegs / kRowRegs : 1);
  constexpr bool kVPre = 2 * KG * kRowRegs <= kLoadRegs;
  static_assert(KG % kKB == 0, "K batches split the key group evenly");
  __shared__ float red_o[kWarps][MW][kDP];
  __shared__ float red_ml[kWarps][MW][2];

  const int lane = static_cast<int>(threadIdx.x) & (kWarpSize - 1);
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int wk_n = a.config.wk;
  const int wq = warp / wk_n, wk = warp % wk_n;
  if (static_cast<int32_t>(blockIdx.x) >= a.counts[0]) return;  // past the plan: the whole CTA, before any barrier
  const int32_t* it = a.items + static_cast<int64_t>(blockIdx.x) * kAttnItemInts;
  const int s = it[0], v0 = it[1], nv = it[2], kb = it[3], ke = it[4], part = it[5], pos0 = it[6], row0 = it[7];
  const int kh = static_cast<int>(blockIdx.y);
  const int G = a.n_heads / a.n_kv, hd = a.head_dim;
  const int m_tile = a.config.mw * a.config.wq;

  // This warp's query vectors in registers: lane owns dims 4·lane + 128·c + [0, 4).
  float q[MW][NC][4];
  int pos[MW];
#pragma unroll
  for (int m = 0; m < MW; ++m) {
    const int vi = wq * MW + m;
    pos[m] = -1;
#pragma unroll
    for (int c = 0; c < NC; ++c)
#pragma unroll
      for (int i = 0; i < 4; ++i) q[m][c][i] = 0.0f;
    if (vi < nv) {
      const int qv = v0 + vi, r = qv / G, g = qv % G;
      pos[m] = pos0 + r;
      const float* qr = row_ptr<const float>(a.q, static_cast<int64_t>(row0 + r) * a.n_heads + kh * G + g);
#pragma unroll
      for (int c = 0; c < NC; ++c)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int d = 4 * lane + 128 * c + i;
          q[m][c][i] = d < hd ? qr[d] : 0.0f;
        }
    }
  }

  const Rows& kc = a.cache.k;
  const Rows& vc = a.cache.v;
  const int bs = static_cast<int>(kc.lead[1]);
  const T* k_head = static_cast<const T*>(kc.data) + kh * kc.lead_stride[2];
  const T* v_head = static_cast<const T*>(vc.data) + kh * vc.lead_stride[2];
  const float* ks_head = kI8 ? static_cast<const float*>(a.cache.k_scale.data) + kh : nullptr;
  const float* vs_head = kI8 ? static_cast<const float*>(a.cache.v_scale.data) + kh : nullptr;
  const int32_t* table = a.block_table.data + static_cast<int64_t>(s) * a.max_blocks;
  const int my_key = lane >> Lanes::kShift;

  float mx[MW], l[MW], o[MW][NC][4];
#pragma unroll
  for (int m = 0; m < MW; ++m) {
    mx[m] = -INFINITY;
    l[m] = 0.0f;
#pragma unroll
    for (int c = 0; c < NC; ++c)
#pragma unroll
      for (int i = 0; i < 4; ++i) o[m][c][i] = 0.0f;
  }

  for (int g0 = kb + wk * KG; g0 < ke; g0 += wk_n * KG) {
    // ---- where the rows of keys g0 .. g0 + KG − 1 live ----
    // Keys at or past ke take key g0's slot (always in range): their loads stay unconditional (no branch between
    // the loads of a group, so they are all in flight at once) and their scores are masked to −inf below.
    int blk_ofs[KG], slot_off[KG];
    {
      const int blk0 = g0 / bs, off0 = g0 - blk0 * bs;
      int blk_i = blk0, off = off0;
#pragma unroll
      for (int j = 0; j < KG; ++j) {
        const bool in = g0 + j < ke;
        blk_ofs[j] = in ? blk_i : blk0;
        slot_off[j] = in ? off : off0;
        if (++off == bs) {
          off = 0;
          ++blk_i;
        }
      }
    }
    int32_t block[KG];
#pragma unroll
    for (int j = 0; j < KG; ++j) block[j] = table[blk_ofs[j]];

    // int8: each lane reads the two scales of the one key it holds after the transpose (one load each, not KG).
    float my_ks = 0.0f, my_vs = 0.0f;
    if constexpr (kI8) {
      int64_t b = block[0];
      int of = slot_off[0];
#pragma unroll
      for (int j = 1; j < KG; ++j)
        if (my_key == j) {
          b = block[j];
          of = slot_off[j];
        }
      const float ksj = ks_head[b * a.cache.k_scale.lead_stride[0] + of * a.cache.k_scale.lead_stride[1]];
      const float vsj = vs_head[b * a.cache.v_scale.lead_stride[0] + of * a.cache.v_scale.lead_stride[1]];
      const bool in = g0 + my_key < ke;
      my_ks = in ? ksj : 0.0f;
      my_vs = in ? vsj : 0.0f;
    }

    // V rows of the group issued together with the K rows (before the softmax) when they fit in registers.
    Raw4<T> vx[kVPre ? KG : 1][NC];
    if constexpr (kVPre) {
#pragma unroll
      for (int j = 0; j < KG; ++j) {
        const T* vr = v_head + static_cast<int64_t>(block[j]) * vc.lead_stride[0] + slot_off[j] * vc.lead_stride[1];
#pragma unroll
        for (int c = 0; c < NC; ++c) vx[j][c] = load4_raw(vr, 4 * lane + 128 * c, hd, a.vec);
      }
    }

    // ---- scores of keys g0 .. g0 + KG − 1, K rows loaded kKB at a time ----
    float part_s[MW][KG];
#pragma unroll
    for (int j0 = 0; j0 < KG; j0 += kKB) {
      Raw4<T> kw[kKB][NC];
#pragma unroll
      for (int jj = 0; jj < kKB; ++jj) {
        const T* kr = k_head + static_cast<int64_t>(block[j0 + jj]) * kc.lead_stride[0] + slot_off[j0 + jj] * kc.lead_stride[1];
#pragma unroll
        for (int c = 0; c < NC; ++c) kw[jj][c] = load4_raw(kr, 4 * lane + 128 * c, hd, a.vec);
      }
#pragma unroll
      for (int jj = 0; jj < kKB; ++jj) {
        float kx[NC][4];
#pragma unroll
        for (int c = 0; c < NC; ++c) unpack4<T>(kw[jj][c], kx[c]);
#pragma unroll
        for (int m = 0; m < MW; ++m) {
          float acc = 0.0f;
#pragma unroll
          for (int c = 0; c < NC; ++c)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc = fmaf(q[m][c][i], kx[c][i], acc);
          part_s[m][j0 + jj] = acc;
        }
      }
    }

    // ---- online softmax: lane holds key g0 + my_key ----
    const int kp = g0 + my_key;
    float p[MW];
#pragma unroll
    for (int m = 0; m < MW; ++m) {
      float sc = transpose_sum<KG>(part_s[m], lane);
      sc = kI8 ? sc * (my_ks * a.scale) : sc * a.scale;
      if (!(kp < ke && kp <= pos[m])) sc = -INFINITY;
      float gm = sc;
#pragma unroll
      for (int off2 = Lanes::kSpan; off2 < kWarpSize; off2 <<= 1) gm = fmaxf(gm, __shfl_xor_sync(kFull, gm, off2));
      const float m_new = fmaxf(mx[m], gm);
      p[m] = 0.0f;
      if (m_new != -INFINITY) {  // warp-uniform
        if (m_new > mx[m]) {
          const float corr = expf(mx[m] - m_new);  // 0 on the first keys (mx = −inf)
          l[m] *= corr;
#pragma unroll
          for (int c = 0; c < NC; ++c)
#pragma unroll
            for (int i = 0; i < 4; ++i) o[m][c][i] *= corr;
          mx[m] = m_new;
        }
        p[m] = expf(sc - m_new);  // 0 for masked keys
        if ((lane & (Lanes::kSpan - 1)) == 0) l[m] += p[m];
        if constexpr (kI8) p[m] *= my_vs;  // V rows enter as (p · v_scale) · code
      }
    }

    // ---- o += p · V, keys in order (V rows loaded kKB at a time unless prefetched) ----
#pragma unroll
    for (int j0 = 0; j0 < KG; j0 += (kVPre ? KG : kKB)) {
      constexpr int kN = kVPre ? KG : kKB;
      Raw4<T> vl[kVPre ? 1 : kKB][NC];
      if constexpr (!kVPre) {
#pragma unroll
        for (int jj = 0; jj < kN; ++jj) {
          const T* vr = v_head + static_cast<int64_t>(block[j0 + jj]) * vc.lead_stride[0] + slot_off[j0 + jj] * vc.lead_stride[1];
#pragma unroll
          for (int c = 0; c < NC; ++c) vl[jj][c] = load4_raw(vr, 4 * lane + 128 * c, hd, a.vec);
        }
      }
#pragma unroll
      for (int jj = 0; jj < kN; ++jj) {
        const int j = j0 + jj;
        float pj[MW];
#pragma unroll
        for (int m = 0; m < MW; ++m) pj[m] = __shfl_sync(kFull, p[m], j << Lanes::kShift);
        if (g0 + j < ke) {  // warp-uniform
          float x[NC][4];
#pragma unroll
          for (int c = 0; c < NC; ++c) {
            if constexpr (kVPre) {
              unpack4<T>(vx[j][c], x[c]);
            } else {
              unpack4<T>(vl[jj][c], x[c]);
            }
          }
#pragma unroll
          for (int m = 0; m < MW; ++m)
#pragma unroll
            for (int c = 0; c < NC; ++c)
#pragma unroll
              for (int i = 0; i < 4; ++i) o[m][c][i] = fmaf(pj[m], x[c][i], o[m][c][i]);
        }
      }
    }
  }

#pragma unroll
  for (int m = 0; m < MW; ++m) l[m] = warp_sum(l[m]);

  // ---- merge the wk warps of each query group ----
  if (wk_n > 1) {
#pragma unroll
    for (int m = 0; m < MW; ++m) {
#pragma unroll
      for (int c = 0; c < NC; ++c)
#pragma unroll
        for (int i = 0; i < 4; ++i) red_o[warp][m][128 * c + 4 * lane + i] = o[m][c][i];
      if (lane == 0) {
        red_ml[warp][m][0] = mx[m];
        red_ml[warp][m][1] = l[m];
      }
    }
    __syncthreads();
    if (wk != 0) return;
#pragma unroll
    for (int m = 0; m < MW; ++m) {
      float big = -INFINITY;
      for (int w = 1; w < wk_n; ++w) big = fmaxf(big, red_ml[warp + w][m][0]);
      big = fmaxf(big, mx[m]);
      if (big == -INFINITY) continue;  // no key of this range is visible to the vector
      const float f0 = expf(mx[m] - big);
      l[m] *= f0;
#pragma unroll
      for (int c = 0; c < NC; ++c)
#pragma unroll
        for (int i = 0; i < 4; ++i) o[m][c][i] *= f0;
      for (int w = 1; w < wk_n; ++w) {
        const float mw_ = red_ml[warp + w][m][0];
        const float f = mw_ == -INFINITY ? 0.0f : expf(mw_ - big);
        l[m] = fmaf(f, red_ml[warp + w][m][1], l[m]);
#pragma unroll
        for (int c = 0; c < NC; ++c)
#pragma unroll
          for (int i = 0; i < 4; ++i) o[m][c][i] = fmaf(f, red_o[warp + w][m][128 * c + 4 * lane + i], o[m][c][i]);
      }
      mx[m] = big;
    }
  }

  // ---- write ----
#pragma unroll
  for (int m = 0; m < MW; ++m) {
    const int vi = wq * MW + m;
    if (vi >= nv) continue;
    if (part < 0) {
      const int qv = v0 + vi, r = qv / G, g = qv % G;
      float* orow = row_ptr<float>(a.out, static_cast<int64_t>(row0 + r) * a.n_heads + kh * G + g);
      const float inv = 1.0f / l[m];
#pragma unroll
      for (int c = 0; c < NC; ++c)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int d = 4 * lane + 128 * c + i;
          if (d < hd) orow[d] = o[m][c][i] * inv;
        }
    } else {
      const int64_t x = (static_cast<int64_t>(part) * a.n_kv + kh) * m_tile + vi;
      float* po = a.partial + x * kDP;
#pragma unroll
      for (int c = 0; c < NC; ++c)
#pragma unroll
        for (int i = 0; i < 4; ++i) po[128 * c + 4 * lane + i] = o[m][c][i];
      if (lane == 0) {
        float* ml = a.partial + static_cast<int64_t>(a.bounds.slots) * a.n_kv * m_tile * kDP + 2 * x;
        ml[0] = mx[m];
        ml[1] = l[m];
      }
    }
  }
}

// The step's plan, written by one thread from q_start / seq_len on the device (a few hundred items at most: one pass
// over the sequences, cheaper than a launch). A plan beyond the bounds the launches were sized by is clamped to them
// and recorded as a fault: the backend raises it at the next synchronize.
__global__ void attention_plan_kernel(const AttentionArgs a) {
  const AttnPlanCounts n =
      attention_plan(a.q_start.data, a.seq_len.data, a.plan, a.bounds, a.items, a.combine);
  const bool over = n.items > a.bounds.items || n.combine > a.bounds.combine || n.slots > a.bounds.slots;
  if (over) record_fault(a.fault, FaultCode::kPlanOverflow, 0, n.items, a.bounds.items);
  a.counts[0] = n.items < a.bounds.items ? n.items : a.bounds.items;
  a.counts[1] = n.combine < a.bounds.combine ? n.combine : a.bounds.combine;
  a.counts[2] = n.slots;
}

// One CTA per (combine entry, kv head, query vector of the tile): out = Σ_s e^{m_s − M} o_s / Σ_s e^{m_s − M} l_s over
// the entry's splits. The split weights e^{m_s − M} are computed once into shared memory, kCombineChunk splits at a
// time; the partial rows of a chunk are read kCombineUnroll at a time (their loads in flight together, the additions
// in split order). One CTA per vector, not a loop over them: a decode step has one entry per kv head, and a CTA that
// walked its vectors and splits one dependent load at a time took 126 µs on an H200 (64 splits, 6 vectors).
constexpr int kCombineChunk = kThreads;
constexpr int kCombineUnroll = 8;
__global__ void __launch_bounds__(kThreads) attention_combine_kernel(const AttentionArgs a) {
  __shared__ float weight[kCombineChunk];
  __shared__ float scratch[kBlockScratch];
  if (static_cast<int32_t>(blockIdx.x) >= a.counts[1]) return;  // past the plan: the whole CTA, before any barrier
  const int32_t* e = a.combine + static_cast<int64_t>(blockIdx.x) * kAttnCombineInts;
  const int v0 = e[0], nv = e[1], part0 = e[2], ns = e[3], row0 = e[4];
  const int kh = static_cast<int>(blockIdx.y);
  const int G = a.n_heads / a.n_kv, hd = a.head_dim;
  const int m_tile = a.config.mw * a.config.wq;
  const int dp = a.config.nc * 128;
  const int tid = static_cast<int>(threadIdx.x);
  // slot p's entry for vector vi is x = (p · n_kv + kh) · m_tile + vi; consecutive splits are `step` apart
  const int64_t step = static_cast<int64_t>(a.n_kv) * m_tile;
  const float* ml = a.partial + a.bounds.slots * step * dp;
  const int vi = static_cast<int>(blockIdx.z);
  if (vi >= nv) return;  // the whole CTA: before any barrier
  const int64_t x0 = (static_cast<int64_t>(part0) * a.n_kv + kh) * m_tile + vi;
  float big = -INFINITY;
  for (int sp = tid; sp < ns; sp += kThreads) big = fmaxf(big, ml[2 * (x0 + sp * step)]);
  big = block_max(big, scratch);
  float acc_l = 0.0f;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // dims tid, tid + 128, ... (head_dim <= 512)
  for (int c0 = 0; c0 < ns; c0 += kCombineChunk) {
    __syncthreads();  // the previous chunk's weights are consumed
    const int sp = c0 + tid;
    if (sp < ns) {
      const float ms = ml[2 * (x0 + sp * step)];
      const float w = ms == -INFINITY ? 0.0f : expf(ms - big);
      weight[tid] = w;
      acc_l = fmaf(w, ml[2 * (x0 + sp * step) + 1], acc_l);
    }
    __syncthreads();
    const int n = min(kCombineChunk, ns - c0);
    auto add = [&](int j) {
      const float w = weight[j];
      const float* po = a.partial + (x0 + static_cast<int64_t>(c0 + j) * step) * dp;
#pragma unroll
      for (int i = 0; i < 4; ++i)
        if (tid + kThreads * i < hd) acc[i] = fmaf(w, po[tid + kThreads * i], acc[i]);
    };
    int j = 0;
    for (; j + kCombineUnroll <= n; j += kCombineUnroll) {
#pragma unroll
      for (int u = 0; u < kCombineUnroll; ++u) add(j + u);
    }
    for (; j < n; ++j) add(j);
  }
  const float inv = 1.0f / block_sum(acc_l, scratch);
  const int qv = v0 + vi, r = qv / G, g = qv % G;
  float* orow = row_ptr<float>(a.out, static_cast<int64_t>(row0 + r) * a.n_heads + kh * G + g);
#pragma unroll
  for (int i = 0; i < 4; ++i)
    if (tid + kThreads * i < hd) orow[tid + kThreads * i] = acc[i] * inv;
}

template <typename T, int NC>
void launch_nc(cudaStream_t stream, const AttentionArgs& a, dim3 grid) {
  switch (a.config.mw) {
    case 1: paged_attention_kernel<T, NC, 1><<<grid, kThreads, 0, stream>>>(a); break;
    case 2: paged_attention_kernel<T, NC, 2><<<grid, kThreads, 0, stream>>>(a); break;
    case 4:
      if constexpr (NC <= 2) paged_attention_kernel<T, NC, 4><<<grid, kThreads, 0, stream>>>(a);
      break;
    case 8:
      if constexpr (NC == 1) paged_attention_kernel<T, NC, 8><<<grid, kThreads, 0, stream>>>(a);
      break;
    default: break;
  }
}

// The kernel instance launch_nc picks for config c (nullptr for a combination it does not launch).
template <typename T, int NC>
const void* kernel_nc(const AttnConfig& c) {
  switch (c.mw) {
    case 1: return reinterpret_cast<const void*>(&paged_attention_kernel<T, NC, 1>);
    case 2: return reinterpret_cast<const void*>(&paged_attention_kernel<T, NC, 2>);
    case 4:
      if constexpr (NC <= 2) return reinterpret_cast<const void*>(&paged_attention_kernel<T, NC, 4>);
      return nullptr;
    case 8:
      if constexpr (NC == 1) return reinterpret_cast<const void*>(&paged_attention_kernel<T, NC, 8>);
      return nullptr;
    default: return nullptr;
  }
}
template <typename T>
const void* kernel_type(const AttnConfig& c) {
  switch (c.nc) {
    case 1: return kernel_nc<T, 1>(c);
    case 2: return kernel_nc<T, 2>(c);
    case 4: return kernel_nc<T, 4>(c);
    default: return nullptr;
  }
}

template <typename T>
void launch_type(cudaStream_t stream, const AttentionArgs& a, dim3 grid) {
  switch (a.config.nc) {
    case 1: launch_nc<T, 1>(stream, a, grid); break;
    case 2: launch_nc<T, 2>(stream, a, grid); break;
    case 4: launch_nc<T, 4>(stream, a, grid); break;
    default: break;
  }
}

}  // namespace

int attention_ctas_per_sm(const AttnConfig& config, KType cache_type) {
  const void* fn = nullptr;
  switch (cache_type) {
    case KType::kF32: fn = kernel_type<float>(config); break;
    case KType::kBF16: fn = kernel_type<Bf16>(config); break;
    case KType::kF16: fn = kernel_type<F16>(config); break;
    case KType::kI8: fn = kernel_type<int8_t>(config); break;
    default: break;
  }
  int n = 0;
  if (fn == nullptr || cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, kThreads, 0) != cudaSuccess) {
    (void)cudaGetLastError();  // a failed query only costs the plan its estimate
    return 1;
  }
  return n > 0 ? n : 1;
}

void paged_attention(cudaStream_t stream, const AttentionArgs& in) {
  if (in.bounds.items == 0) return;
  AttentionArgs args = in;
  args.vec = rows_vectorizable(args.cache.k, 4) && rows_vectorizable(args.cache.v, 4);
  args.items = args.plan_ws;
  args.combine = args.items + static_cast<int64_t>(args.bounds.items) * kAttnItemInts;
  args.counts = args.combine + static_cast<int64_t>(args.bounds.combine) * kAttnCombineInts;
  attention_plan_kernel<<<1, 1, 0, stream>>>(args);
  const dim3 grid(static_cast<unsigned>(args.bounds.items), static_cast<unsigned>(args.n_kv));
  if (args.cache.k.type == KType::kI8) {
    launch_type<int8_t>(stream, args, grid);
  } else {
    visit_float_type(args.cache.k.type, [&](auto tag) { launch_type<decltype(tag)>(stream, args, grid); });
  }
  if (args.bounds.combine > 0) {
    const dim3 cgrid(static_cast<unsigned>(args.bounds.combine), static_cast<unsigned>(args.n_kv),
                     static_cast<unsigned>(args.config.mw * args.config.wq));  // one CTA per vector of a tile
    attention_combine_kernel<<<cgrid, kThreads, 0, stream>>>(args);
  }
}

}  // namespace ninfer::kern
