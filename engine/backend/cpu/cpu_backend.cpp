#include "engine/backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <thread>

#include <fmt/format.h>

#include "engine/backend/checks/elementwise_checks.h"
#include "engine/backend/checks/linear_checks.h"
#include "engine/backend/top_pairs.h"
#include "engine/core/aligned_buffer.h"
#include "engine/core/error.h"

namespace ninfer {

bool cpu_has_avx2_fma() { return cpu::cpu_supports_avx2_fma_f16c(); }

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions &options) {
  return std::make_unique<cpu::CpuBackend>(options);
}

namespace cpu {

namespace {

const Kernels *pick_kernels(CpuSimd simd) {
  switch (simd) {
  case CpuSimd::kScalar:
    return &scalar_kernels();
  case CpuSimd::kAvx2:
    if (const Kernels *k = avx2_kernels())
      return k;
    fail(ErrorKind::kUnsupported, "cpu backend: AVX2+FMA+F16C requested but "
                                  "this CPU or build lacks them");
  case CpuSimd::kAuto:
    break;
  }
  if (const Kernels *k = avx512_kernels())
    return k;
  if (const Kernels *k = avx2_kernels())
    return k;
  return &scalar_kernels();
}

// kScalar: the scalar reference; kAvx2: the AVX2 kernels; kAuto: AVX-512 VBMI
// where the CPU has it, else AVX-512 VNNI, else AVX2. legacy: the table's 4 x 1 W4A4 kernel in
// place of the blocked one (AVX2: bit-identical; AVX-512: the lane kernel
// sums in another order).
const Nvfp4Kernels *pick_nvfp4_kernels(CpuSimd simd, bool legacy) {
  const Nvfp4Kernels *avx2 =
      legacy ? nvfp4_avx2_4x1_kernels() : nvfp4_avx2_kernels();
  switch (simd) {
  case CpuSimd::kScalar:
    return nullptr;
  case CpuSimd::kAvx2:
    return avx2;
  case CpuSimd::kAuto:
    break;
  }
  const Nvfp4Kernels *avx512 =
      legacy ? nvfp4_avx512_4x1_kernels() : nvfp4_avx512_vbmi_kernels();
  if (!avx512 && !legacy)
    avx512 = nvfp4_avx512_kernels();
  return avx512 ? avx512 : avx2;
}

int pick_threads(int requested) {
  if (requested < 0)
    fail(ErrorKind::kInvalidArgument,
         "cpu backend: threads must be >= 0, got {}", requested);
  if (requested > 0)
    return requested;
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

} // namespace

CpuBackend::CpuBackend(const CpuBackendOptions &options)
    : k_(pick_kernels(options.simd)),
      nvfp4_k_(pick_nvfp4_kernels(options.simd, options.legacy_gemm)),
      nvfp4_activations_(options.nvfp4_activations),
      legacy_gemm_(options.legacy_gemm),
      bf16_activations_(options.bf16_activations),
      bf16_dot_(options.simd == CpuSimd::kAuto ? bf16_dot_avx512() : nullptr),
      pool_(pick_threads(options.threads)) {
  scratch_.resize(static_cast<size_t>(pool_.size()));
}

std::string CpuBackend::name() const {
  return fmt::format(
      "cpu({}, {} threads, nvfp4 {} {}{})", k_->name, pool_.size(),
      nvfp4_k_ ? nvfp4_k_->name : "scalar",
      nvfp4_activations_ == Nvfp4Activations::kNvfp4 ? "w4a4" : "w4a16",
      !bf16_activations_ ? ""
      : bf16_dot_        ? ", bf16 activations avx512-bf16"
                         : ", bf16 activations (rounded, f32 gemm)");
}

float *CpuBackend::scratch(int thread, size_t n) {
  auto &s = scratch_[static_cast<size_t>(thread)];
  if (s.size() < n)
    resize_exact(s, n);
  return s.data();
}

CpuWorkspaceBytes CpuBackend::workspace_bytes() const {
  CpuWorkspaceBytes b;
  b.linear = nvfp4_a4_.storage.capacity() +
             (nvfp4_a16_.capacity() + gemm_packed_.capacity() +
              bf16_widened_.capacity()) *
                 sizeof(float) +
             bf16_rows_.storage.capacity() * sizeof(uint16_t);
  for (const std::vector<float> &s : scratch_)
    b.thread_scratch += s.capacity() * sizeof(float);
  return b;
}

Buffer CpuBackend::alloc(size_t bytes) {
  std::shared_ptr<void> p = aligned_zeroed(bytes);
  if (!p)
    fail(ErrorKind::kOutOfMemory, "cpu backend: cannot allocate {} bytes",
         bytes);
  Buffer b;
  b.memory = std::move(p);
  b.bytes = bytes;
  b.device = Device::kCpu;
  return b;
}

void CpuBackend::copy(const Tensor &dst, const Tensor &src) {
  check_cpu("copy", "dst", dst);
  check_cpu("copy", "src", src);
  if (dst.dtype != src.dtype)
    fail(ErrorKind::kInvalidArgument, "copy: dtype {} -> {}", src.describe(),
         dst.describe());
  check_same_shape("copy", "src", src, dst);
  const size_t row_bytes =
      static_cast<size_t>(src.row_size()) * dtype_element_bytes(src.dtype);
  if (src.is_contiguous() && dst.is_contiguous()) {
    std::memmove(dst.data, src.data,
                 row_bytes * static_cast<size_t>(src.rows()));
    return;
  }
  for (int64_t r = 0; r < src.rows(); ++r)
    std::memmove(row_ptr(dst, r), row_ptr(src, r), row_bytes);
}

void CpuBackend::zero(const Tensor &t) {
  check_cpu("zero", "t", t);
  const size_t row_bytes =
      static_cast<size_t>(t.row_size()) * dtype_element_bytes(t.dtype);
  if (t.is_contiguous()) {
    std::memset(t.data, 0, row_bytes * static_cast<size_t>(t.rows()));
    return;
  }
  for (int64_t r = 0; r < t.rows(); ++r)
    std::memset(row_ptr(t, r), 0, row_bytes);
}

// ---- dense ----

void CpuBackend::linear(const Tensor &y, const Tensor &x, const Tensor &w,
                        bool accumulate) {
  check_linear(y, x, w, Device::kCpu); // engine/backend/checks/linear_checks.h
  if (w.dtype == DType::kNVFP4)
    linear_nvfp4(y, x, w, accumulate); // nvfp4_linear.cpp
  else if (w.dtype == DType::kBF16 && bf16_activations_)
    linear_bf16_activations(y, x, w, accumulate); // bf16_linear.cpp
  else
    linear_dense(y, x, w, accumulate);
}

GemmTasks CpuBackend::gemm_tasks(int64_t M, int64_t N, int64_t row_bytes,
                                 int tile_rows, bool threaded) const {
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  auto round4 = [](int64_t n) { return std::max<int64_t>(4, (n + 3) / 4 * 4); };
  GemmTasks g{.M = M, .N = N, .tile_rows = tile_rows};
  const int64_t tiles = ceil_div(M, tile_rows);
  const int64_t want = threaded ? int64_t{pool_.size()} * 4 : 1;
  // For many activation rows keep a task's weight panel (re-read once per
  // tile) within ~256 KiB so that it stays in L2.
  const int64_t l2_rows =
      std::max<int64_t>(4, (256 << 10) / std::max<int64_t>(1, row_bytes));
  // Enough weight-row ranges to balance the threads...
  g.nb = ceil_div(N, want);
  if (M > tile_rows)
    g.nb = std::min(g.nb, l2_rows);
  g.nb = round4(g.nb);
  // ...or, where the matrix has too few rows for that (the GDN gate
  // projections: one per value head), whole L2 panels, and the tiles split
  // into ranges as well.
  if (ceil_div(N, g.nb) < want && tiles > 1)
    g.nb = round4(std::min(N, l2_rows));
  g.n_tasks = ceil_div(N, g.nb);
  const int64_t splits =
      g.n_tasks >= want ? 1 : std::min(tiles, ceil_div(want, g.n_tasks));
  g.tiles_per_task = ceil_div(tiles, splits);
  g.m_tasks = ceil_div(tiles, g.tiles_per_task);
  return g;
}

void CpuBackend::linear_dense(const Tensor &y, const Tensor &x,
                              const Tensor &w, bool accumulate) {
  const int64_t M = x.rows(), K = x.row_size(), N = w.dim(0);
  if (M == 0 || N == 0)
    return;
  const GemmFn fn = k_->gemm(w.dtype);
  const int64_t xs = x.row_stride(), ys = y.row_stride(), ws = w.row_stride();
  const auto *xp = static_cast<const float *>(x.data);
  auto *yp = static_cast<float *>(y.data);
  const int64_t wbytes = static_cast<int64_t>(dtype_element_bytes(w.dtype));
  const bool threaded = M * N * K >= (1 << 16);
  const GemmTasks g = gemm_tasks(M, N, K * wbytes, kGemmMaxRows, threaded);
  // Activation rows packed once per call for every task (kernels that pack;
  // one row reads x directly), by the tasks' row ranges, over the threads.
  const float *packed = nullptr;
  if (k_->gemm_pack && M > 1 && !legacy_gemm_) {
    resize_exact(gemm_packed_,
                 static_cast<size_t>((M + kGemmMaxRows - 1) / kGemmMaxRows *
                                     gemm_pack_block(K)));
    float *out = gemm_packed_.data();
    auto pack = [&](int64_t t, int) {
      const GemmTasks::Range r = g.range(t * g.n_tasks);
      k_->gemm_pack(xp + r.m0 * xs, xs, r.m1 - r.m0, K,
                    out + r.m0 / kGemmMaxRows * gemm_pack_block(K));
    };
    pool_.run(g.m_tasks, pack, threaded && g.m_tasks > 1);
    packed = out;
  }
  auto run = [&](int64_t t, int) {
    const GemmTasks::Range r = g.range(t);
    for (int64_t m0 = r.m0; m0 < r.m1; m0 += kGemmMaxRows) {
      const int rows =
          static_cast<int>(std::min<int64_t>(kGemmMaxRows, M - m0));
      const float *pb =
          packed ? packed + m0 / kGemmMaxRows * gemm_pack_block(K) : nullptr;
      fn(xp + m0 * xs, xs, rows, pb, w.data, ws, r.n0, r.n1, K, yp + m0 * ys,
         ys, accumulate);
    }
  };
  pool_.run(g.count(), run, threaded);
}

void CpuBackend::embedding(const Tensor &y, const Tensor &table,
                           std::span<const int32_t> ids) {
  check_embedding(y, table, ids, Device::kCpu);
  const int64_t H = table.dim(1);
  for (size_t t = 0; t < ids.size(); ++t)
    k_->to_f32(table.at(ids[t]), table.dtype,
               row_f32(y, static_cast<int64_t>(t)), H);
}

void CpuBackend::gather_rows(const Tensor &y, const Tensor &x,
                             std::span<const int32_t> rows) {
  check_gather_rows(y, x, rows, Device::kCpu);
  for (size_t r = 0; r < rows.size(); ++r) {
    std::memmove(row_f32(y, static_cast<int64_t>(r)), row_f32(x, rows[r]),
                 static_cast<size_t>(x.dim(1)) * sizeof(float));
  }
}

void CpuBackend::argmax_rows(std::span<int32_t> ids, const Tensor &x) {
  check_argmax_rows(ids, x, Device::kCpu);
  const int64_t V = x.dim(1);
  for (int64_t r = 0; r < x.dim(0); ++r) {
    const float *row = row_f32(x, r);
    ids[static_cast<size_t>(r)] =
        static_cast<int32_t>(std::max_element(row, row + V) - row);
  }
}

void CpuBackend::max_rows(const Tensor &best, const Tensor &x, bool nan_first) {
  check_max_rows(best, x, Device::kCpu);
  const int64_t V = x.dim(1);
  auto *out = static_cast<float *>(best.data);
  for (int64_t r = 0; r < x.dim(0); ++r) {
    const float *row = row_f32(x, r);
    float m = std::numeric_limits<float>::quiet_NaN();
    int64_t at = -1;
    if (nan_first && std::isnan(row[0])) {
      m = row[0], at = 0;
    } else {
      for (int64_t c = 0; c < V; ++c)
        if (!std::isnan(row[c]) && (at < 0 || row[c] > m)) m = row[c], at = c;
    }
    out[2 * r] = m;
    out[2 * r + 1] = static_cast<float>(at);
  }
}

void CpuBackend::top_k_rows(const Tensor &best, const Tensor &x) {
  check_top_k_rows(best, x, Device::kCpu);
  const int64_t V = x.dim(1), k = best.dim(1);
  auto *out = static_cast<float *>(best.data);
  TopPairs top(static_cast<size_t>(k));
  for (int64_t r = 0; r < x.dim(0); ++r) {
    const float *row = row_f32(x, r);
    top.clear();
    for (int64_t c = 0; c < V; ++c) top.push(row[c], c);
    top.write(out + 2 * k * r);
  }
}

void CpuBackend::mask_columns(const Tensor &x, const Tensor &allowed) {
  check_mask_columns(x, allowed, Device::kCpu);
  const int64_t V = x.dim(1);
  const auto *ok = static_cast<const int8_t *>(allowed.data);
  for (int64_t r = 0; r < x.dim(0); ++r) {
    float *row = row_f32(x, r);
    for (int64_t c = 0; c < V; ++c)
      if (ok[c] == 0)
        row[c] = -std::numeric_limits<float>::infinity();
  }
}

void CpuBackend::edit_logits(const Tensor &x,
                             std::span<const LogitEdit> edits) {
  check_edit_logits(x, edits, Device::kCpu);
  for (const LogitEdit &e : edits) {
    float &v = row_f32(x, e.row)[e.col];
    v = apply_logit_edit(v, e.add, e.scale, e.sub);
  }
}

} // namespace cpu
} // namespace ninfer
