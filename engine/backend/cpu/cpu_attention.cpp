// Paged-KV attention of the CPU backend: cache writes (f32/bf16/f16 converted, i8 quantized per token and kv head)
// and causal GQA softmax attention (online softmax per block: S = Q·Kᵀ and P·V by gemm_nn; i8 codes read in place).
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/backend/cpu/attention_int8.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/cpu_workspace.h"
#include "engine/backend/checks/attention_checks.h"
#include "engine/core/error.h"

namespace ninfer::cpu {

namespace {

// The int8 kernels matching the backend's SIMD choice.
const Int8KvKernels& int8_kernels_for(const Kernels* k) {
  if (k != &scalar_kernels())
    if (const Int8KvKernels* a = int8_kv_avx2_kernels()) return *a;
  return int8_kv_scalar_kernels();
}

constexpr int64_t kRowsPerTask = kAttentionRowsPerTask;

}  // namespace

size_t attention_scratch_floats(int64_t bs, int64_t hd, int64_t rows, int64_t group) {
  const int64_t nacc = rows * group;
  return static_cast<size_t>(2 * bs * hd + nacc * (hd + 2) + nacc * bs);
}

void CpuBackend::kv_write(const KvLayer& cache, const Tensor& k, const Tensor& v, std::span<const int32_t> slots) {
  check_kv_write(cache, k, v, slots, Device::kCpu);
  const Tensor& k_cache = cache.k;
  const Tensor& v_cache = cache.v;
  const int64_t bs = k_cache.dim(1), nkv = k_cache.dim(2), hd = k_cache.dim(3);
  const bool i8 = k_cache.dtype == DType::kI8;
  const Int8KvKernels& ik = int8_kernels_for(k_);
  for (size_t t = 0; t < slots.size(); ++t) {
    const int64_t slot = slots[t];
    if (slot < 0) continue;
    const int64_t block = slot / bs, off = slot % bs;
    for (int64_t h = 0; h < nkv; ++h) {
      const auto* kr = static_cast<const float*>(k.at(static_cast<int64_t>(t), h));
      const auto* vr = static_cast<const float*>(v.at(static_cast<int64_t>(t), h));
      if (!i8) {
        k_->from_f32(kr, k_cache.dtype, k_cache.at(block, off, h), hd);
        k_->from_f32(vr, v_cache.dtype, v_cache.at(block, off, h), hd);
        continue;
      }
      bool bad_k = false, bad_v = false;
      *static_cast<float*>(cache.k_scale.at(block, off, h)) =
          ik.quantize(kr, static_cast<int8_t*>(k_cache.at(block, off, h)), hd, &bad_k);
      *static_cast<float*>(cache.v_scale.at(block, off, h)) =
          ik.quantize(vr, static_cast<int8_t*>(v_cache.at(block, off, h)), hd, &bad_v);
      if (bad_k || bad_v)
        fail(ErrorKind::kInvalidArgument, "kv_write: {} row of token {} kv head {} holds inf or NaN; an i8 cache "
             "cannot store it", bad_k ? "k" : "v", t, h);
    }
  }
}

void CpuBackend::attention(const Tensor& out, const Tensor& q, const KvLayer& cache, const PagedKv& kv, float scale) {
  check_attention(out, q, cache, kv, Device::kCpu);
  const Tensor& k_cache = cache.k;
  const Tensor& v_cache = cache.v;
  const int64_t nh = q.dim(1), hd = q.dim(2);
  const int64_t bs = k_cache.dim(1), nkv = k_cache.dim(2);
  const int64_t S = kv.num_seqs();

  const int64_t G = nh / nkv;
  // tasks: (sequence, kv head, chunk of kRowsPerTask query rows)
  std::vector<int64_t> task_seq, task_row0;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t r0 = kv.q_start[static_cast<size_t>(s)], r1 = kv.q_start[static_cast<size_t>(s + 1)];
    for (int64_t r = r0; r < r1; r += kRowsPerTask) {
      task_seq.push_back(s);
      task_row0.push_back(r);
    }
  }
  const int64_t ntasks = static_cast<int64_t>(task_seq.size()) * nkv;
  const bool direct = k_cache.dtype == DType::kF32;
  const bool i8 = k_cache.dtype == DType::kI8;  // codes read in place, widened in registers (attention_int8.h)
  const Int8KvKernels& ik = int8_kernels_for(k_);
  auto run = [&](int64_t task, int thread) {
    const int64_t kh = task % nkv, ti = task / nkv;
    const int64_t s = task_seq[static_cast<size_t>(ti)], r0 = task_row0[static_cast<size_t>(ti)];
    const int64_t r_end = kv.q_start[static_cast<size_t>(s + 1)];
    const int64_t r1 = std::min(r_end, r0 + kRowsPerTask), nr = r1 - r0;
    const int64_t n_new = r_end - kv.q_start[static_cast<size_t>(s)];
    const int64_t base_pos = kv.seq_len[static_cast<size_t>(s)] - n_new - kv.q_start[static_cast<size_t>(s)];
    const int64_t last_pos = base_pos + r1 - 1;  // the last row attends to [0, last_pos]
    const int64_t nacc = nr * G;
    float* mem = scratch(thread, attention_scratch_floats(bs, hd, nr, G));
    float* kt = mem;             // [hd, bs] the block's keys, transposed
    float* vbuf = kt + bs * hd;  // [bs, hd] its values as f32
    float* acc = vbuf + bs * hd;
    float* mx = acc + nacc * hd;
    float* sum = mx + nacc;
    float* P = sum + nacc;  // [nacc, bs] this block's scores, then probabilities (0 past a row's last key)
    std::fill(acc, acc + nacc * hd, 0.0f);
    std::fill(mx, mx + nacc, -std::numeric_limits<float>::infinity());
    std::fill(sum, sum + nacc, 0.0f);
    const int32_t* table = kv.block_table.data() + s * kv.max_blocks;
    for (int64_t b = 0; b * bs <= last_pos; ++b) {
      const int64_t block = table[b];
      const int64_t nk = std::min(bs, last_pos + 1 - b * bs);  // valid keys of this block for the last row
      const float* vb = nullptr;                     // f32: V rows (converted into vbuf unless stored f32)
      const int8_t *kq = nullptr, *vq = nullptr;     // i8: codes of row 0 of this block and kv head
      const float *ks = nullptr, *vs = nullptr;      // i8: their scales
      int64_t kstride = 0, vstride = 0, kss = 0, vss = 0;  // row strides (elements) of K, V and their scales
      if (i8) {
        kq = static_cast<const int8_t*>(k_cache.at(block, 0, kh));
        vq = static_cast<const int8_t*>(v_cache.at(block, 0, kh));
        ks = static_cast<const float*>(cache.k_scale.at(block, 0, kh));
        vs = static_cast<const float*>(cache.v_scale.at(block, 0, kh));
        kstride = k_cache.stride[1];
        vstride = v_cache.stride[1];
        kss = cache.k_scale.stride[1];
        vss = cache.v_scale.stride[1];
      } else {
        // Kᵀ of the block, widened to f32 ([hd, bs]: key j of dim d at kt[d·bs + j]), once for all the task's rows.
        k_->transpose_to_f32(k_cache.at(block, 0, kh), k_cache.dtype, k_cache.stride[1], nk, hd, kt, bs);
        if (direct) {
          vb = static_cast<const float*>(v_cache.at(block, 0, kh));
          vstride = v_cache.stride[1];
        } else {
          for (int64_t j = 0; j < nk; ++j) k_->to_f32(v_cache.at(block, j, kh), v_cache.dtype, vbuf + j * hd, hd);
          vb = vbuf;
          vstride = hd;
        }
        // S = Q Kᵀ for every row of the task against the block's nk keys (those past a row's position are dropped
        // below). gemm_nn sums each score over d in order, the same whatever rows share the step.
        for (int64_t g = 0; g < G; ++g)
          k_->gemm_nn(static_cast<const float*>(q.at(r0, kh * G + g)), q.stride[0], kt, bs, P + g * bs, G * bs, nr, nk,
                      hd, false);
      }
      // Online softmax per query row: its scores over this block, the running max and the rescale of what it has
      // summed so far, then exp(score − max) in place.
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t pos = base_pos + r;
        const int64_t nvalid = std::min(nk, pos + 1 - b * bs);
        for (int64_t g = 0; g < G; ++g) {
          const int64_t a = (r - r0) * G + g;
          float* sc = P + a * bs;
          std::fill(sc + std::max<int64_t>(nvalid, 0), sc + nk, 0.0f);
          if (nvalid <= 0) continue;
          float bmax = -std::numeric_limits<float>::infinity();
          if (i8) {
            const float* qv = static_cast<const float*>(q.at(r, kh * G + g));
            for (int64_t j = 0; j < nvalid; ++j) sc[j] = ik.dot(qv, kq + j * kstride, hd) * (ks[j * kss] * scale);
          } else {
            for (int64_t j = 0; j < nvalid; ++j) sc[j] *= scale;
          }
          for (int64_t j = 0; j < nvalid; ++j) bmax = std::max(bmax, sc[j]);
          const float m_new = std::max(mx[a], bmax);
          const float corr = std::exp(mx[a] - m_new);  // exp(-inf) = 0 on the first block
          float* ac = acc + a * hd;
          if (corr != 1.0f) k_->scale(corr, ac, hd);
          sum[a] = sum[a] * corr + k_->exp_shift(sc, m_new, sc, nvalid);
          mx[a] = m_new;
          if (i8)
            for (int64_t j = 0; j < nvalid; ++j) ik.axpy(sc[j] * vs[j * vss], vq + j * vstride, ac, hd);
        }
      }
      // acc += P V for the whole row block at once (each output still sums its keys in order)
      if (!i8) k_->gemm_nn(P, bs, vb, vstride, acc, hd, nacc, hd, nk, true);
    }
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t g = 0; g < G; ++g) {
        const int64_t a = (r - r0) * G + g;
        float* o = static_cast<float*>(out.at(r, kh * G + g));
        const float inv = 1.0f / sum[a];
        for (int64_t d = 0; d < hd; ++d) o[d] = acc[a * hd + d] * inv;
      }
  };
  pool_.parallel_for(ntasks, run);
}

}  // namespace ninfer::cpu
